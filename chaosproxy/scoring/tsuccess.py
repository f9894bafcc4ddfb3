"""t_success: the first step after which the task's goal held, from the runner's verdicts.

The runner records the task verifier's verdict on the state before any call and after
every state-changing step (EpisodeRecord.goal_held_initially and goal_checks), so the
scorer needs no domain code. Older run directories lack them: the record's own
t_success is used then.
"""

from __future__ import annotations

from chaosproxy.scoring.episoderows import Episode


def t_success_of(record: Episode) -> tuple[int | None, str]:
    """(t_success, where it came from): "verdicts" when read from the recorded checks
    (0 if the goal held before any call), else "record"."""
    if record.goal_held_initially:
        return 0, "verdicts"
    if record.goal_checks is None:
        return record.t_success, "record"
    for check in record.goal_checks:
        if check.holds:
            if check.step is None:
                return record.t_success, "record"  # held after a call the proxy did not number
            return check.step, "verdicts"
    return None, "verdicts"
