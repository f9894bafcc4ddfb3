"""AgentProp-Bench §5.2–5.3 at the paper's injection point (ModelParameterCorruption).

The paper injects at the parameter-generation stage: the model's planned tool call carries
a wrong value before the agent executes it. Its stage indicators, per episode:

- S1: the injection was applied, i.e. the call the agent *executed* carried the injected
  value (a tool call of the rewritten tool, before the agent's next model call, whose
  argument equals the injected value). An agent that checks the call and drops or fixes
  the value rejects the injection: S1 = 0.
- S2: S1, and that call executed with an observable effect: the service ran it and its
  answer (a validation error or a result for the wrong value) reached the agent.
- S3: the final state is wrong (the task's typed verifiers; no LLM judge).

Over the n evaluable episodes in which the fault was drawn (the paper's n counts every
P2 trace, applied or not): p_k = P[S_k], r12 = P[S2 | S1], r23 = P[S3 | S2],
P[S3 | S1], rejection = 1 − P[S1], recovery = 1 − r23 (Table 6). Wilson intervals.

The proxy-side variant (ParameterCorruption rewrites the call after the agent sent it, so
S1 holds by construction) is `aggregate.stage`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from chaosproxy.scoring.calls import Call, is_fresh
from chaosproxy.scoring.results import ModelStageIndicators
from chaosproxy.scoring.stats import wilson

if TYPE_CHECKING:
    from chaosproxy.scoring.episodes import EpisodeScore

MODEL_FAULT = "ModelParameterCorruption"
CallT = TypeVar("CallT", bound=Call)


@dataclass
class ModelInjection:
    """One episode's model-stage injection, as the log tells it."""

    drawn: bool = False
    landed: bool = False
    """The model's reply was rewritten and reached the agent."""
    tool: str | None = None
    argument: str | None = None
    original: Any = None
    injected: Any = None
    carried: bool = False
    """S1: an executed call carried the injected value."""
    executed: bool = False
    """S2: such a call was run by the service and its answer reached the agent."""
    watching: bool = False
    """Between the rewritten reply and the agent's next model call."""


def same_value(sent: Any, injected: Any) -> bool:
    """Typed equality; a scalar sent as a string (a query or path value) matches its text."""
    if sent == injected and type(sent) is type(injected):
        return True
    scalars = (str, int, float)
    return (
        isinstance(sent, scalars)
        and isinstance(injected, scalars)
        and not isinstance(sent, bool)
        and not isinstance(injected, bool)
        and str(sent) == str(injected)
    )


def observe(into: dict[str, ModelInjection], call: Call) -> None:
    """Fold one log record into its episode's injection."""
    injection = into.get(call.episode)
    if call.kind == "model_call":
        if injection is not None:
            injection.watching = False  # the agent asked the model again
        fault = call.fault
        if fault is None or fault.name != MODEL_FAULT or not is_fresh(fault):
            return
        if injection is None:
            injection = into[call.episode] = ModelInjection()
        injection.drawn = True
        effect = fault.params.get("effect")
        if call.fault_delivered and isinstance(effect, dict) and not injection.landed:
            injection.landed = True
            injection.tool = effect.get("tool")
            injection.argument = effect.get("argument")
            injection.original = effect.get("original")
            injection.injected = effect.get("corrupted")
            injection.watching = True
        return
    if call.kind != "tool_call" or injection is None or not injection.watching:
        return
    if call.tool != injection.tool or injection.argument is None:
        return
    arguments = call.arguments or {}
    if injection.argument not in arguments:
        return
    if not same_value(arguments[injection.argument], injection.injected):
        return
    injection.carried = True
    answered = call.upstream_called and call.upstream_status is not None
    if answered and not call.fault_delivered and call.outcome not in ("reset", "timeout"):
        injection.executed = True


def watch(calls: Iterable[CallT], into: dict[str, ModelInjection]) -> Iterator[CallT]:
    """Pass the log through unchanged, folding each record into `into` on the way."""
    for call in calls:
        observe(into, call)
        yield call


def model_stage(scores: Sequence[EpisodeScore]) -> ModelStageIndicators | None:
    """§5.2–5.3 over the group's evaluable episodes in which the fault was drawn; None
    when it never was (the group ran another profile)."""
    drawn = [
        s
        for s in scores
        if s.evaluable and s.model_injection is not None and s.model_injection.drawn
    ]
    if not drawn:
        return None
    n = len(drawn)
    s1 = [s for s in drawn if s.model_injection is not None and s.model_injection.carried]
    s2 = [s for s in s1 if s.model_injection is not None and s.model_injection.executed]
    s3 = sum(not s.success for s in drawn)
    s3_s1 = sum(not s.success for s in s1)
    s3_s2 = sum(not s.success for s in s2)
    landed = sum(s.model_injection is not None and s.model_injection.landed for s in drawn)
    none_s1 = "no executed call carried the injected value"
    none_s2 = "no call carrying the injected value was answered"
    return ModelStageIndicators(
        n=n,
        landed=landed,
        s1=len(s1),
        s2=len(s2),
        s3=s3,
        s3_given_s1=s3_s1,
        s3_given_s2=s3_s2,
        p_s1=wilson(len(s1), n, "no episode"),
        p_s2=wilson(len(s2), n, "no episode"),
        p_s3=wilson(s3, n, "no episode"),
        r12=wilson(len(s2), len(s1), none_s1),
        r23=wilson(s3_s2, len(s2), none_s2),
        p_s3_given_s1=wilson(s3_s1, len(s1), none_s1),
        rejection_rate=wilson(n - len(s1), n, "no episode"),
        recovery_rate=wilson(len(s2) - s3_s2, len(s2), none_s2),
    )
