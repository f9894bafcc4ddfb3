"""One model endpoint as the model-driven agents use it, with every call accounted.

Each chat or embeddings call adds its `usage` (as the server reported it), its latency
and its count to the episode's `ModelUsage` in a `UsageLedger` the runner reads when the
episode ends, so tokens and cost land in episodes.jsonl whatever the agent's architecture.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessage

MOCK_FINGERPRINT = "chaosproxy-mock-model"
"""The `system_fingerprint` `chaosproxy mock-model` puts on every answer: results made with
it are labelled as such (EpisodeRecord.mock_model)."""
MOCK_OWNER = "chaosproxy-mock"
"""The `owned_by` of every model `chaosproxy mock-model` lists under /v1/models."""


@dataclass
class ModelUsage:
    """Model traffic of one episode."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    calls: int = 0
    latency_s: float = 0.0
    usage_missing: int = 0
    mock: bool = False

    def add(self, usage: Any, latency_s: float) -> None:
        self.calls += 1
        self.latency_s += latency_s
        if usage is None:
            self.usage_missing += 1
            return
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        total = getattr(usage, "total_tokens", None)
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.total_tokens += int(total) if total is not None else prompt + completion


@dataclass
class UsageLedger:
    """Per-episode usage, shared by the agents of a run and the runner that records it."""

    episodes: dict[str, ModelUsage] = field(default_factory=dict)

    def for_episode(self, episode: str) -> ModelUsage:
        return self.episodes.setdefault(episode, ModelUsage())

    def pop(self, episode: str) -> ModelUsage | None:
        return self.episodes.pop(episode, None)


@dataclass(frozen=True)
class ModelEndpoint:
    """A model name and where it is served (None: the OpenAI default or OPENAI_BASE_URL)."""

    model: str
    base_url: str | None = None
    api_key: str | None = None

    def key(self) -> str:
        return self.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"


class ModelClient:
    """Chat and embeddings calls for one episode, each one added to `usage`."""

    def __init__(self, endpoint: ModelEndpoint, usage: ModelUsage) -> None:
        self.endpoint = endpoint
        self.usage = usage
        self._llm = AsyncOpenAI(base_url=endpoint.base_url, api_key=endpoint.key())

    async def close(self) -> None:
        await self._llm.close()

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        seed: int | None = None,
        words_only: bool = False,
    ) -> ChatCompletionMessage:
        """One chat turn; `words_only` offers the tools (the history calls them) but asks
        for an answer in words (`tool_choice: none`)."""
        options: dict[str, Any] = {"temperature": 0}
        if tools:
            options["tools"] = tools
            if words_only:
                options["tool_choice"] = "none"
        if seed is not None:
            options["seed"] = seed
        started = time.monotonic()
        completion = await self._llm.chat.completions.create(
            model=self.endpoint.model,
            messages=messages,  # type: ignore[arg-type]
            **options,
        )
        self.usage.add(completion.usage, time.monotonic() - started)
        if completion.system_fingerprint == MOCK_FINGERPRINT:
            self.usage.mock = True
        return completion.choices[0].message

    async def embed(self, texts: list[str], model: str) -> list[list[float]]:
        started = time.monotonic()
        response = await self._llm.embeddings.create(model=model, input=texts)
        self.usage.add(response.usage, time.monotonic() - started)
        return [list(item.embedding) for item in sorted(response.data, key=lambda d: d.index)]
