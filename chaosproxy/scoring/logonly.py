"""Scoring a run directory that has only the proxy's log (calls.jsonl, from `chaosproxy up`).

With no episodes.jsonl there is no task verdict: success, SR, FRR, PEI, pass^k and tiers
cannot be computed and are said to be missing, never shown as 0. What the log supports is
computed the way a full run computes it, over every episode the log names: per-episode
call counts, fault delivery (tool calls and model calls apart, against the profile
config.json records), and recovery by fault type where the rule needs no verdict
(retryable faults: a later clean call of the same tool or model endpoint). A persistent
fault's recovery is judged by the episode's success, so it is n/a here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from chaosproxy.scoring.aggregate import Hit, delivery_of, recovery_row
from chaosproxy.scoring.calls import EpisodeCalls
from chaosproxy.scoring.results import LogEpisode, LogOnlyRun
from chaosproxy.scoring.rundir import RunData

NOT_COMPUTED = (
    "success, SR, FRR, PEI, pass^k and the tier need episodes with verdicts "
    "(episodes.jsonl, written by `chaosproxy run`): not computed"
)
UP_PROFILE_NOTE = (
    "profile rates are those of the profile `chaosproxy up` started with (config.json); a "
    "profile set later through the control API is not recorded"
)


def _episode(name: str, e: EpisodeCalls) -> LogEpisode:
    visible = [h for h in e.faults if h.visible]
    model = [h for h in e.model_faults if h.visible]
    return LogEpisode(
        episode=name,
        tool_calls=e.tool_calls,
        model_calls=e.model_calls,
        faults=len(visible),
        model_faults=len(model),
        recovered=sum(h.retryable and h.recovered for h in [*visible, *model]),
        retries=e.retries,
        ignored_retry_after=e.ignored_retry_after,
        uninjected_errors=e.uninjected_errors,
        fault_types=sorted({h.name for h in [*e.faults, *e.model_faults]}),
    )


def score_log(run: RunData, label: str, facts: Mapping[str, EpisodeCalls], seed: int) -> LogOnlyRun:
    """What calls.jsonl alone says about a run with no episode records."""
    profiles = run.config.profiles
    profile = next(iter(profiles)) if len(profiles) == 1 else None
    episodes = [facts[name] for name in sorted(facts)]
    tool_hits: dict[str, list[Hit]] = defaultdict(list)
    model_hits: dict[str, list[Hit]] = defaultdict(list)
    for e in episodes:
        for hit in e.faults:
            if hit.visible:
                tool_hits[hit.name].append((hit, None, None))
        for hit in e.model_faults:
            if hit.visible:
                model_hits[hit.name].append((hit, None, None))
    name = f"{label}/log"
    notes = [UP_PROFILE_NOTE] if run.config.kind == "up" and profile is not None else []
    if profile is None:
        notes.append("no single profile recorded in config.json: profile rates are n/a")
    return LogOnlyRun(
        label=label,
        kind=run.config.kind,
        profile=profile,
        episodes=[_episode(n, facts[n]) for n in sorted(facts)],
        delivery=delivery_of(episodes, profiles.get(profile) if profile else None),
        recovery=[recovery_row(f, hits, seed, name) for f, hits in sorted(tool_hits.items())],
        recovery_all=recovery_row(
            "all", [h for hits in tool_hits.values() for h in hits], seed, name
        ),
        model_recovery=[
            recovery_row(f, hits, seed, f"{name}/model") for f, hits in sorted(model_hits.items())
        ],
        not_computed=NOT_COMPUTED,
        notes=notes,
    )
