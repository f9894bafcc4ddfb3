"""Shrinking a failing schedule: delta debugging (ddmin) over its faults.

Start from the schedule an episode received, re-run the episode for candidate
sub-schedules, keep any that still fails, until no single fault can go (1-minimal, as
Zeller and Hildebrandt's ddmin guarantees); then make each remaining fault simpler while
the failure stays: its default parameters, fewer steps for a step entry, then the
variants its unit proposes (`FaultUnit.simpler`: a shorter delay, a shorter incident,
one mode instead of several). With `trials` k a
candidate fails only if the agent fails in at least `share` of k runs, for agents that
are not deterministic. Every run counts against `budget`; when it is spent the smallest
failing schedule found so far is the answer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from chaosproxy.agents.base import Agent
from chaosproxy.errors import ChaosError
from chaosproxy.faults import catalog as c
from chaosproxy.faults.schedule import Schedule, ScheduledFault
from chaosproxy.records import CallRecord, EpisodeRecord
from chaosproxy.replay.received import received, schedule_of
from chaosproxy.replay.rerun import Outcome, Rerunner

T = TypeVar("T")
RunOnce = Callable[[Schedule], Awaitable[Outcome]]
Report = Callable[[str], None]


class BudgetSpent(ChaosError):
    """No run is left in the budget."""


@dataclass
class ShrinkResult:
    """The smallest failing schedule found, how it was found, and the failure it keeps."""

    start: Schedule
    minimal: Schedule
    runs: int
    budget_spent: bool
    reproduced: bool
    """Whether the starting schedule failed when re-run (False: nothing to shrink)."""
    failure: Outcome | None = None
    baseline: Outcome | None = None
    """The episode with no fault at all (None if the budget ran out first)."""
    log: list[str] = field(default_factory=list)

    def divergence(self) -> CallRecord | None:
        """The first call of the failing run that differs from the fault-free run's."""
        if self.failure is None or self.baseline is None:
            return None
        for ours, theirs in zip(self.failure.calls, self.baseline.calls, strict=False):
            if _gist(ours) != _gist(theirs):
                return ours
        longer = self.failure.calls[len(self.baseline.calls) :]
        return longer[0] if longer else None


def _gist(call: CallRecord) -> tuple[object, ...]:
    return (call.tool, call.arguments, call.status, call.outcome, call.fault is not None)


class Shrinker:
    """ddmin over a schedule's faults, with trials per candidate and a run budget."""

    def __init__(
        self,
        run_once: RunOnce,
        trials: int = 1,
        share: float = 0.5,
        budget: int = 60,
        report: Report | None = None,
        same_failure: bool = True,
    ) -> None:
        """`same_failure`: a candidate counts as failing only if it fails the way the
        starting schedule first failed (the episode's outcome: a verifier's "goal not
        met", an agent crash, a timeout), so shrinking keeps the failure it started from."""
        if trials < 1:
            raise ValueError("trials must be >= 1")
        if not 0 < share <= 1:
            raise ValueError("share must be in (0, 1]")
        self._run_once = run_once
        self.trials = trials
        self.needed = max(1, math.ceil(share * trials))
        self.budget = budget
        self.runs = 0
        self._report = report or (lambda line: None)
        self._seen: dict[str, bool] = {}
        self._failures: dict[str, Outcome] = {}
        self.log: list[str] = []
        self._last_pass: Outcome | None = None
        self.same_failure = same_failure
        self.kind: str | None = None
        """The outcome of the failure being kept (set by the first failing run)."""

    def _say(self, line: str) -> None:
        self.log.append(line)
        self._report(line)

    async def fails(self, faults: Sequence[ScheduledFault]) -> bool:
        """Whether the agent fails under these faults in at least `needed` of `trials`."""
        key = _key(faults)
        if key in self._seen:
            return self._seen[key]
        failed = ran = other = 0
        for trial in range(self.trials):
            if self.runs >= self.budget:
                raise BudgetSpent
            self.runs += 1
            ran += 1
            outcome = await self._run_once(Schedule(faults=list(faults)))
            if outcome.failed and self.same_failure and self.kind is None:
                self.kind = outcome.record.outcome
            if outcome.failed and (not self.same_failure or outcome.record.outcome == self.kind):
                failed += 1
                self._failures.setdefault(key, outcome)
            elif not outcome.failed:
                self._last_pass = outcome
            else:
                other += 1
            if failed >= self.needed or failed + (self.trials - trial - 1) < self.needed:
                break
        verdict = failed >= self.needed
        self._seen[key] = verdict
        self._say(
            f"run {self.runs}/{self.budget}: {len(faults)} fault(s) -> "
            f"{'fails' if verdict else 'passes'}"
            + (f" (failed {failed} of {ran} run(s))" if self.trials > 1 else "")
            + (f" ({other} failed otherwise: {self.kind} kept)" if other else "")
        )
        return verdict

    async def shrink(self, start: Schedule) -> ShrinkResult:
        entries = [entry.model_copy(update={"logged": {}}) for entry in start.faults]
        indices = list(range(len(entries)))
        best: list[int] = indices
        reproduced = False
        spent = False
        baseline: Outcome | None = None

        async def test(subset: list[int]) -> bool:
            return await self.fails([entries[i] for i in subset])

        try:
            reproduced = await test(indices)
            if not reproduced:
                self._say("the starting schedule does not fail on re-run: nothing to shrink")
            else:
                if await test([]):
                    best = []
                    self._say("the agent fails with no fault at all")
                else:
                    baseline = self._last_pass
                    best = await self._ddmin(indices, test)
                    entries, best = await self._simplify(entries, best)
        except BudgetSpent:
            spent = True
            self._say(f"budget of {self.budget} runs spent")
            failing = [key for key, failed in self._seen.items() if failed]
            if failing:
                smallest = min(reversed(failing), key=lambda key: len(json.loads(key)))
                entries = [ScheduledFault.model_validate(e) for e in json.loads(smallest)]
                best = list(range(len(entries)))
            else:
                best = indices
        minimal = Schedule(faults=[entries[i] for i in best])
        return ShrinkResult(
            start=start,
            minimal=minimal,
            runs=self.runs,
            budget_spent=spent,
            reproduced=reproduced,
            failure=self._failures.get(_key(minimal.faults)),
            baseline=baseline,
            log=self.log,
        )

    async def _ddmin(
        self, items: list[int], test: Callable[[list[int]], Awaitable[bool]]
    ) -> list[int]:
        n = 2
        while len(items) >= 2:
            chunks = _split(items, n)
            reduced = False
            for chunk in chunks:
                if await test(chunk):
                    items, n, reduced = chunk, 2, True
                    break
            if not reduced and n > 2:
                for skip in range(len(chunks)):
                    rest = [i for j, chunk in enumerate(chunks) if j != skip for i in chunk]
                    if await test(rest):
                        items, n, reduced = rest, max(n - 1, 2), True
                        break
            if not reduced:
                if n >= len(items):
                    break
                n = min(len(items), 2 * n)
        return items

    async def _simplify(
        self, entries: list[ScheduledFault], best: list[int]
    ) -> tuple[list[ScheduledFault], list[int]]:
        """Each remaining fault made simpler while the failure stays: its default
        parameters, a step entry over fewer steps, then the unit's own simpler variants
        (`FaultUnit.simpler`: a shorter delay, fewer steps, one mode), greedily, the first
        variant that still fails kept and asked again."""
        for index in best:
            visited = {_key([entries[index]])}  # never back to a variant already left
            for _ in range(MAX_SIMPLIFY_ROUNDS):
                kept = None
                for variant in _variants(entries[index]):
                    if _key([variant]) in visited:
                        continue
                    visited.add(_key([variant]))
                    trial = [variant if i == index else entries[i] for i in best]
                    if await self.fails(trial):
                        kept = variant
                        break
                if kept is None:
                    break
                entries = [kept if i == index else e for i, e in enumerate(entries)]
        return entries, best


MAX_SIMPLIFY_ROUNDS = 8
"""Simpler variants adopted one after another, at most, per fault."""


def _variants(entry: ScheduledFault) -> list[ScheduledFault]:
    """Simpler versions of one entry, the boldest first."""
    out: list[ScheduledFault] = []
    if entry.params:
        out.append(entry.model_copy(update={"params": {}}))
    if entry.from_step is not None:
        last = entry.to_step
        if last is None:
            out.append(entry.model_copy(update={"to_step": entry.from_step}))
        elif last > entry.from_step:
            out.append(entry.model_copy(update={"to_step": entry.from_step}))
            middle = (entry.from_step + last) // 2
            if entry.from_step < middle < last:
                out.append(entry.model_copy(update={"to_step": middle}))
    unit = c.CATALOG[entry.fault]
    current = entry.settings(unit.params())
    now = current.model_dump()
    for simpler in unit.simpler(current):
        changed = {k: v for k, v in simpler.model_dump().items() if v != now.get(k)}
        if changed:
            out.append(entry.model_copy(update={"params": {**entry.params, **changed}}))
    return out


def _key(faults: Sequence[ScheduledFault]) -> str:
    """A schedule's identity for the cache of verdicts."""
    return json.dumps([entry.model_dump(mode="json") for entry in faults], sort_keys=True)


def _split(items: list[T], n: int) -> list[list[T]]:
    """`items` in n nearly equal consecutive parts."""
    size, extra = divmod(len(items), n)
    parts, start = [], 0
    for k in range(n):
        end = start + size + (1 if k < extra else 0)
        parts.append(items[start:end])
        start = end
    return [part for part in parts if part]


async def shrink_episode(
    run_dir: Path,
    episode: str,
    *,
    agent: Agent | None = None,
    trials: int = 1,
    share: float = 0.5,
    budget: int = 60,
    report: Report | None = None,
    timeout_s: float = 30.0,
) -> ShrinkResult:
    """Shrink the schedule `episode` of RUN_DIR received, re-running it in-process with
    the same agent (by name, or `agent`) and task."""
    got = received(run_dir, episode)
    _, result = await shrink_received(
        got.episode,
        got.schedule,
        agent=agent,
        trials=trials,
        share=share,
        budget=budget,
        report=report,
        timeout_s=timeout_s,
    )
    return result


async def shrink_received(
    record: EpisodeRecord,
    schedule: Schedule | None,
    *,
    agent: Agent | None = None,
    trials: int = 1,
    share: float = 0.5,
    budget: int = 60,
    report: Report | None = None,
    timeout_s: float = 30.0,
) -> tuple[Schedule, ShrinkResult]:
    """Shrink `schedule` on `record`'s episode; None: run the episode once under its
    profile's draws first (one run of the budget) and shrink the schedule it received.
    Returns the schedule shrinking started from, and the result."""
    say = report or (lambda line: None)
    async with Rerunner(record, agent=agent, timeout_s=timeout_s) as rerunner:
        if schedule is None:
            first = await rerunner.run(None)
            schedule = schedule_of(first.calls)
            say(
                f"run under {record.profile}: {first.verdict()}, "
                f"{len(schedule.faults)} fault(s) received"
            )
            budget -= 1
            if not first.failed:
                return schedule, ShrinkResult(
                    start=schedule,
                    minimal=schedule,
                    runs=1,
                    budget_spent=False,
                    reproduced=False,
                    baseline=first if not schedule.faults else None,
                )
        shrinker = Shrinker(
            lambda candidate: rerunner.run(candidate),
            trials=trials,
            share=share,
            budget=max(budget, 1),
            report=report,
        )
        return schedule, await shrinker.shrink(schedule)
