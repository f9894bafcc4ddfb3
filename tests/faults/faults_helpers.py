"""Engines that inject one chosen fault, for effect tests."""

from __future__ import annotations

from typing import Any

from chaosproxy.faults import CallContext, Decision, FaultEngine, Profile


def only(
    fault: str,
    params: dict[str, Any] | None = None,
    first_step_only: bool = False,
    hints: dict[str, Any] | None = None,
    seed: int = 3,
) -> FaultEngine:
    data: dict[str, Any] = {"name": f"only-{fault}", "failure_rate": 1.0, "weights": {fault: 1.0}}
    if params:
        data["params"] = {fault: params}
    if first_step_only:
        data["scope"] = {"steps": [1, 1]}
    return FaultEngine(Profile.model_validate(data), seed=seed, hints={"travel": hints or {}})


def call(
    engine: FaultEngine,
    step: int,
    tool: str = "search_flights",
    episode: str = "ep",
    transport: str = "rest",
    **arguments: Any,
) -> Decision:
    return engine.before_call(
        CallContext(
            episode=episode,
            step=step,
            domain="travel",
            tool=tool,
            transport=transport,
            arguments=arguments,
        )
    )
