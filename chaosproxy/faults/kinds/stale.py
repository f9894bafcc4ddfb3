"""StaleData: the call is answered from a frozen cache (ReliabilityBench: "cache
inconsistency"): the first reply to the same call, else the tool's first reply in the
episode to other arguments (a cache keyed too coarsely). So it lands on any call of a tool
that answered before, not only on a repeated call (which agents seldom make: at lambda0.2
0 of 401 delivered faults were StaleData when only the same call counted)."""

from __future__ import annotations

from chaosproxy.faults.models import Params
from chaosproxy.faults.unit import Effect, FaultUnit, Reply


class StaleDataParams(Params):
    pass


class StaleData(FaultUnit):
    name = "StaleData"
    params = StaleDataParams
    stage = "episode"
    recoverable = False
    summary = (
        "serve a cached earlier reply instead of the fresh one: the same call's first, "
        "else the tool's first in the episode"
    )
    incident = True
    per_arguments = True
    replays = True
    after_rank = 10

    def transform(self, reply: Reply) -> Effect | None:
        if reply.earlier is None:
            return None
        return Effect(body=reply.earlier, info={"served": reply.earlier_basis or "first reply"})
