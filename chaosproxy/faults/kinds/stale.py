"""StaleData: the same call is answered from a frozen cache, its first reply."""

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
    summary = "serve the first reply to the same call instead of the fresh one"
    incident = True
    per_arguments = True
    replays = True
    after_rank = 10

    def transform(self, reply: Reply) -> Effect | None:
        if reply.earlier is None:
            return None
        return Effect(body=reply.earlier, info={"served": "first reply"})
