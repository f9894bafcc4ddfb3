"""Hunting: systematic fault sweeps, for failures the λ profiles rarely draw.

The episode is run once without faults. Then:

1. **singles**: each chosen fault alone on each tool call that fault-free run made (the
   n-th call of its tool);
2. **pairs**: for every single that landed and passed, a second fault on a call *that
   single's run reached after it* (its retries included: a second call of a tool exists
   only once the first one failed). Pairs nearest in the log come first: every pair at
   distance 1 (the very next call), then distance 2, ... up to `window`; at most
   `max_pairs` pair runs, and never beyond the run budget;
3. every failing schedule is **shrunk** (ddmin, then milder parameters) and the minimal
   ones are grouped by their pattern: which faults on which call of the tool.

A draw meets a given (fault, position) pair with probability λ·weight, a given pair of
them with its square; the sweep meets each once. Runs are cached by schedule, so a
shrink never re-runs a schedule the sweep already ran (deterministic agents).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from chaosproxy.errors import ChaosError
from chaosproxy.faults import catalog as c
from chaosproxy.faults.schedule import Schedule, ScheduledFault
from chaosproxy.records import CallRecord
from chaosproxy.replay.rerun import Outcome, Rerunner
from chaosproxy.replay.shrink import Report, Shrinker

DEFAULT_FAULTS = (
    "ServerError",
    "SoftRateLimit",
    "TransientTimeout",
    "ConnectionReset",
    "PartialResponse",
    "EmptyResponse",
    "SchemaDrift",
    "StaleData",
)
"""Per-call tool faults a sweep tries by default (one of each family)."""

DEFAULT_WINDOW = 3
"""Pairs: the second fault at most this many tool calls after the first."""
DEFAULT_MAX_PAIRS = 60
"""Pairs: at most this many pair runs."""
SHRINK_BUDGET = 20
"""Runs at most per shrink of one failing schedule (each within the hunt's budget)."""


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def pattern(schedule: Schedule) -> tuple[str, str]:
    """(group key, where) of a failing schedule: the key says which faults hit which
    call of a tool (and whether of the same tool), `where` the tools it was seen on.

    "SoftRateLimit hits the 2nd call" with where "travel/search_flights": single faults
    group across tools; a pair groups when its faults and calls match and its tools are
    the same (or not) alike.
    """
    entries = schedule.faults
    parts = []
    for entry in entries:
        place = f"the {_ordinal(entry.call)} call" if entry.call is not None else None
        if place is None:
            place = f"step {entry.from_step} on"
        parts.append(f"{entry.fault} hits {place}")
    tools = sorted({entry.tool for entry in entries})
    if not entries:
        return "no fault at all", ""
    if len(entries) == 1:
        return parts[0], tools[0]
    same = len(tools) == 1 and tools[0] != "*"
    key = ", then ".join(parts) + (" of the same tool" if same else "")
    return key, ", ".join(tools) if same else " + ".join(entry.tool for entry in entries)


@dataclass(frozen=True)
class Found:
    """A failing schedule the sweep met, and the minimal one shrinking it gave."""

    schedule: Schedule
    minimal: Schedule
    verdict: str
    shrink_runs: int
    budget_spent: bool


@dataclass
class Group:
    """Minimal failing schedules that share a pattern ("fails when ... of any of ...")."""

    key: str
    where: list[str] = field(default_factory=list)
    schedules: list[Schedule] = field(default_factory=list)

    def label(self) -> str:
        return f"fails when {self.key}: {'; '.join(self.where)}"


@dataclass
class HuntResult:
    baseline: Outcome
    positions: list[tuple[str, int]] = field(default_factory=list)
    """The fault-free run's tool calls: (domain/tool, n-th call of it)."""
    singles: int = 0
    pairs: int = 0
    pair_candidates: int = 0
    """Pairs within the window (the runs `pairs` is a prefix of)."""
    runs: int = 0
    """Episode runs, shrinking included (cached schedules not counted)."""
    found: list[Found] = field(default_factory=list)
    missed: list[ScheduledFault] = field(default_factory=list)
    """Entries that could not land on their call (reported, not dropped)."""
    budget_spent: bool = False

    @property
    def tried(self) -> int:
        return self.singles + self.pairs

    def minimal(self) -> list[Schedule]:
        """The distinct minimal failing schedules, in the order found."""
        seen: dict[str, Schedule] = {}
        for item in self.found:
            seen.setdefault(_canonical(item.minimal), item.minimal)
        return list(seen.values())

    def groups(self) -> list[Group]:
        out: dict[str, Group] = {}
        for schedule in self.minimal():
            key, where = pattern(schedule)
            group = out.setdefault(key, Group(key))
            if where not in group.where:
                group.where.append(where)
            group.schedules.append(schedule)
        return list(out.values())

    def grouped(self) -> dict[str, list[str]]:
        """Failing single-fault positions per fault (as found, before shrinking)."""
        groups: dict[str, list[str]] = {}
        for item in self.found:
            if len(item.schedule.faults) == 1:
                entry = item.schedule.faults[0]
                groups.setdefault(entry.fault, []).append(f"call {entry.call} of {entry.tool}")
        return groups


def _canonical(schedule: Schedule) -> str:
    document = schedule.model_dump(mode="json", exclude_defaults=True)
    faults = sorted(json.dumps(entry, sort_keys=True) for entry in document.get("faults", []))
    return "\n".join(faults)


def _tool_positions(calls: Sequence[CallRecord]) -> list[tuple[str, int]]:
    """Each tool call in log order as (domain/tool, its n-th call)."""
    positions: list[tuple[str, int]] = []
    seen: dict[str, int] = {}
    for call in calls:
        if call.kind != "tool_call" or call.tool is None:
            continue
        tool = f"{call.domain}/{call.tool}"
        seen[tool] = seen.get(tool, 0) + 1
        positions.append((tool, seen[tool]))
    return positions


def _landed(outcome: Outcome, name: str) -> bool:
    return any(call.fault is not None and call.fault.name == name for call in outcome.calls)


class _BudgetSpent(ChaosError):
    """The run budget ran out mid-search (caught here; the results so far stand)."""


class _Runs:
    """Episode runs under a budget, cached by schedule."""

    def __init__(self, run: Callable[[Schedule], Awaitable[Outcome]], budget: int) -> None:
        self._run = run
        self.budget = budget
        self.runs = 0
        self._cache: dict[str, Outcome] = {}

    @property
    def left(self) -> int:
        return self.budget - self.runs

    async def __call__(self, schedule: Schedule) -> Outcome:
        key = _canonical(schedule)
        if key in self._cache:
            return self._cache[key]
        if self.runs >= self.budget:
            raise _BudgetSpent
        self.runs += 1
        outcome = await self._run(schedule)
        self._cache[key] = outcome
        return outcome


async def hunt(
    rerunner: Rerunner,
    faults: Sequence[str] = DEFAULT_FAULTS,
    budget: int = 200,
    report: Report | None = None,
    *,
    pairs: bool = True,
    window: int = DEFAULT_WINDOW,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    shrink: bool = True,
    params: dict[str, dict[str, object]] | None = None,
) -> HuntResult:
    """Sweep `faults` over the episode's calls, singles then pairs, shrink what fails.

    `params`: per fault, parameters over the profile's for every entry the sweep puts.
    """
    say = report or (lambda line: None)
    for name in faults:
        c.check_fault_name(name)
    settings = params or {}
    runs = _Runs(lambda schedule: rerunner.run(schedule), budget)
    baseline = await runs(Schedule())
    result = HuntResult(baseline=baseline, positions=_tool_positions(baseline.calls))
    say(f"fault-free run: {baseline.verdict()}, {len(result.positions)} tool call(s)")
    if baseline.failed:
        say("the agent fails with no fault at all: nothing to hunt")
        result.runs = runs.runs
        return result

    def entry(name: str, tool: str, position: int) -> ScheduledFault:
        return ScheduledFault(
            tool=tool, call=position, fault=name, params=dict(settings.get(name, {}))
        )

    failing: list[tuple[Schedule, Outcome]] = []
    passed: list[tuple[ScheduledFault, Outcome]] = []
    singles = [(name, tool, n) for name in faults for tool, n in result.positions]
    pair_list: list[tuple[int, Schedule]] = []
    try:
        for index, (name, tool, position) in enumerate(singles, 1):
            first = entry(name, tool, position)
            schedule = Schedule(faults=[first])
            outcome = await runs(schedule)
            result.singles += 1
            landed = _landed(outcome, name)
            if not landed:
                result.missed.append(first)
            elif outcome.failed:
                failing.append((schedule, outcome))
            else:
                passed.append((first, outcome))
            verdict = "did not land" if not landed else "fails" if outcome.failed else "passes"
            say(f"single {index}/{len(singles)}: {first.label()} -> {verdict}")
        if pairs:
            pair_list = _pairs(passed, faults, window, entry)
            result.pair_candidates = len(pair_list)
            todo = pair_list[:max_pairs]
            for index, (_, schedule) in enumerate(todo, 1):
                outcome = await runs(schedule)
                result.pairs += 1
                names = [item.fault for item in schedule.faults]
                landed = all(_landed(outcome, name) for name in names)
                if landed and outcome.failed:
                    failing.append((schedule, outcome))
                verdict = "did not land" if not landed else "fails" if outcome.failed else "passes"
                say(
                    f"pair {index}/{len(todo)}: "
                    + " + ".join(item.label() for item in schedule.faults)
                    + f" -> {verdict}"
                )
            if len(pair_list) > max_pairs:
                say(f"{len(pair_list) - max_pairs} pair(s) beyond --max-pairs not tried")
        for index, (schedule, outcome) in enumerate(failing, 1):
            if not shrink:
                result.found.append(Found(schedule, schedule, outcome.verdict(), 0, False))
                continue
            say(f"shrinking failing schedule {index}/{len(failing)}")
            shrinker = Shrinker(runs, budget=SHRINK_BUDGET, report=say)
            shrunk = await shrinker.shrink(schedule)
            failure = shrunk.failure or outcome
            result.found.append(
                Found(
                    schedule,
                    shrunk.minimal,
                    failure.verdict(),
                    shrinker.runs,
                    shrunk.budget_spent,
                )
            )
            if runs.left <= 0:
                raise _BudgetSpent
    except _BudgetSpent:
        result.budget_spent = True
        say(f"budget of {budget} runs spent")
        done = {_canonical(item.schedule) for item in result.found}
        for schedule, outcome in failing:
            if _canonical(schedule) not in done:
                result.found.append(Found(schedule, schedule, outcome.verdict(), 0, True))
    result.runs = runs.runs
    return result


def _pairs(
    passed: Sequence[tuple[ScheduledFault, Outcome]],
    faults: Sequence[str],
    window: int,
    entry: Callable[[str, str, int], ScheduledFault],
) -> list[tuple[int, Schedule]]:
    """Pair schedules by distance: the second fault on a call the first single's run
    reached, 1..`window` tool calls after the call the first fault hit; each unordered
    pair once."""
    out: list[tuple[int, Schedule]] = []
    seen: set[str] = set()
    for first, outcome in passed:
        reached = _tool_positions(outcome.calls)
        try:
            at = reached.index((first.tool, first.call or 0))
        except ValueError:
            continue
        for distance in range(1, window + 1):
            if at + distance >= len(reached):
                break
            tool, position = reached[at + distance]
            for name in faults:
                schedule = Schedule(faults=[first, entry(name, tool, position)])
                key = _canonical(schedule)
                if key in seen:
                    continue
                seen.add(key)
                out.append((distance, schedule))
    out.sort(key=lambda item: item[0])  # stable: within a distance, sweep order
    return out
