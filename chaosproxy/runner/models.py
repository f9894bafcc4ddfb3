"""Models as a grid axis, and what a run records about each model's use.

`--model` is repeatable: every model-driven agent runs once per model, labelled
`agent.model` when there is more than one (episode ids allow only ``[A-Za-z0-9_.~-]``,
other characters become `_`), so one run compares models as ReliabilityBench
does (Table 10). Scripted agents are not multiplied. Token usage comes from the agents'
ledger; cost is usage times the `--price` of the model, per million tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from chaosproxy.agents.llm import MOCK_OWNER, ModelEndpoint, ModelUsage
from chaosproxy.agents.registry import is_model_agent
from chaosproxy.records import EpisodeRecord, TokenUsage, read_jsonl

Price = tuple[float, float]
"""US dollars per million prompt tokens, per million completion tokens."""
UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
LABEL_MODEL_CHARS = 40


@dataclass(frozen=True)
class AgentPlan:
    label: str
    name: str
    model: str | None


def plan_agents(agents: Sequence[str], models: Sequence[str]) -> list[AgentPlan]:
    """One plan per (model-driven agent, model); scripted agents once, without a model."""
    plans: list[AgentPlan] = []
    for name in agents:
        if not is_model_agent(name) or not models:
            plans.append(AgentPlan(name, name, None))
        elif len(models) == 1:
            plans.append(AgentPlan(name, name, models[0]))
        else:
            plans += [AgentPlan(model_label(name, m), name, m) for m in models]
    labels = [plan.label for plan in plans]
    clashes = sorted({label for label in labels if labels.count(label) > 1})
    if clashes:
        raise ValueError(f"models that differ only in {UNSAFE.pattern} share labels {clashes}")
    return plans


def model_label(agent: str, model: str) -> str:
    return f"{agent}.{UNSAFE.sub('_', model)[:LABEL_MODEL_CHARS]}"


def cost_usd(usage: TokenUsage, price: Price | None) -> float | None:
    if price is None:
        return None
    prompt_price, completion_price = price
    cost = usage.prompt_tokens * prompt_price + usage.completion_tokens * completion_price
    return round(cost / 1_000_000, 8)


def with_usage(
    record: EpisodeRecord, model: str, usage: ModelUsage | None, price: Price | None
) -> EpisodeRecord:
    """The record with the episode's model traffic (zero when the agent never called it)."""
    usage = usage or ModelUsage()
    tokens = TokenUsage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens,
    )
    return record.model_copy(
        update={
            "model": model,
            "usage": tokens,
            "model_calls": usage.calls,
            "model_latency_s": round(usage.latency_s, 4),
            "usage_missing": usage.usage_missing,
            "cost_usd": cost_usd(tokens, price),
            "mock_model": usage.mock,
        }
    )


async def probe_mock(endpoints: Iterable[ModelEndpoint]) -> dict[str, bool]:
    """Which models a `chaosproxy mock-model` serves, from its /models listing (best effort:
    an endpoint that does not answer is taken for a real one; episodes are labelled anyway)."""

    async def one(http: httpx.AsyncClient, endpoint: ModelEndpoint) -> tuple[str, bool]:
        if endpoint.base_url is None:
            return endpoint.model, False
        with contextlib.suppress(httpx.HTTPError, ValueError, AttributeError, TypeError):
            response = await http.get(
                endpoint.base_url.rstrip("/") + "/models",
                headers={"Authorization": f"Bearer {endpoint.key()}"},
            )
            owners = {item.get("owned_by") for item in response.json().get("data", [])}
            return endpoint.model, MOCK_OWNER in owners
        return endpoint.model, False

    async with httpx.AsyncClient(timeout=3.0) as http:
        found = await asyncio.gather(*(one(http, e) for e in endpoints))
    return dict(sorted(found))


def usage_table(episodes_file: Path) -> list[str]:
    """Tokens and cost per agent, and per episode (ReliabilityBench Table 10), for the CLI."""
    if not episodes_file.exists():
        return []
    rows: dict[str, list[EpisodeRecord]] = {}
    for record in read_jsonl(episodes_file, EpisodeRecord):
        if record.usage is not None:
            rows.setdefault(record.agent, []).append(record)
    if not rows:
        return []
    lines = [
        f"{'agent':<28} {'model':<22} {'episodes':>8} {'calls':>6} {'tokens':>10} "
        f"{'tokens/ep':>9} {'cost $':>10} {'cost/ep $':>10}"
    ]
    for agent, records in sorted(rows.items()):
        tokens = sum(r.usage.total_tokens for r in records if r.usage is not None)
        calls = sum(r.model_calls or 0 for r in records)
        costs = [r.cost_usd for r in records if r.cost_usd is not None]
        cost = f"{sum(costs):.4f}" if len(costs) == len(records) else "n/a"
        per_episode = f"{sum(costs) / len(records):.6f}" if cost != "n/a" else "n/a"
        model = records[0].model or ""
        if any(r.mock_model for r in records):
            model += " (mock)"
        lines.append(
            f"{agent:<28} {model:<22} {len(records):>8} {calls:>6} {tokens:>10} "
            f"{tokens / len(records):>9.0f} {cost:>10} {per_episode:>10}"
        )
    return lines
