"""Hunting: systematic single-fault sweeps, for failures the λ profiles rarely draw.

The episode is run once without faults; then each chosen fault is put, alone, on each
tool call that fault-free run made (the n-th call of its tool), and every failing
single-fault schedule is kept. A draw meets a given (fault, position) pair with
probability λ·weight; the sweep meets each one exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from chaosproxy.faults import catalog as c
from chaosproxy.faults.schedule import Schedule, ScheduledFault
from chaosproxy.replay.rerun import Outcome, Rerunner
from chaosproxy.replay.shrink import Report

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


@dataclass
class HuntResult:
    baseline: Outcome
    tried: int = 0
    failing: list[tuple[ScheduledFault, str]] = field(default_factory=list)
    """Each failing single-fault entry, with the verdict it led to."""
    missed: list[ScheduledFault] = field(default_factory=list)
    """Entries that could not land on their call (reported, not dropped)."""
    budget_spent: bool = False

    def grouped(self) -> dict[str, list[str]]:
        """Failing positions per fault: "fails when ServerError hits call 1 of x/y"."""
        groups: dict[str, list[str]] = {}
        for entry, _ in self.failing:
            groups.setdefault(entry.fault, []).append(f"call {entry.call} of {entry.tool}")
        return groups


async def hunt(
    rerunner: Rerunner,
    faults: Sequence[str] = DEFAULT_FAULTS,
    budget: int = 200,
    report: Report | None = None,
) -> HuntResult:
    say = report or (lambda line: None)
    for name in faults:
        c.check_fault_name(name)
    baseline = await rerunner.run(Schedule())
    result = HuntResult(baseline=baseline)
    positions: list[tuple[str, int]] = []
    seen: dict[str, int] = {}
    for call in baseline.calls:
        if call.kind != "tool_call" or call.tool is None:
            continue
        tool = f"{call.domain}/{call.tool}"
        seen[tool] = seen.get(tool, 0) + 1
        positions.append((tool, seen[tool]))
    say(f"fault-free run: {baseline.verdict()}, {len(positions)} tool call(s)")
    for name in faults:
        for tool, position in positions:
            if result.tried >= budget:
                result.budget_spent = True
                say(f"budget of {budget} runs spent")
                return result
            entry = ScheduledFault(tool=tool, call=position, fault=name)
            outcome = await rerunner.run(Schedule(faults=[entry]))
            result.tried += 1
            landed = any(
                call.fault is not None and call.fault.name == name for call in outcome.calls
            )
            if not landed:
                result.missed.append(entry)
            elif outcome.failed:
                result.failing.append((entry, outcome.verdict()))
            say(
                f"run {result.tried}: {entry.label()} -> "
                + ("did not land" if not landed else "fails" if outcome.failed else "passes")
            )
    return result
