"""The project's shared vocabulary: the shapes the proxy's log, the fault engine and the
scorer all speak, declared once.

A leaf module: it imports nothing of the project (the pure fault engine may import it;
tests/test_layout.py holds that), only the standard library and pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Transport = Literal["rest", "mcp"]
"""How an agent reaches a domain's tools."""
Target = Literal["tool", "model"]
"""What a call goes to: a domain's tool, or a model endpoint."""
Stage = Literal["before", "after", "connection", "episode"]
"""Where a fault acts: on the call, on the reply, on the connection, on the episode."""


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Where one domain (or upstream) is reached through the proxy, inside an episode when
    the URLs carry `/e/{episode}`: its REST base, its OpenAPI document, its MCP endpoint.
    What the environment hands out, what an agent is given, what a command agent reads
    (`CHAOS_ENDPOINTS`, with the keys `rest_base`, `openapi_url`, `mcp_url`)."""

    rest: str
    openapi: str
    mcp: str

    @classmethod
    def under(cls, base: str, name: str) -> Endpoints:
        """The URLs of service `name` under the proxy base `base` (with any `/e/...`)."""
        return cls(
            rest=f"{base}/{name}", openapi=f"{base}/{name}/openapi.json", mcp=f"{base}/{name}/mcp"
        )

    def as_env(self) -> dict[str, str]:
        """The command-agent contract's keys (docs/running.md, `CHAOS_ENDPOINTS`)."""
        return {"rest_base": self.rest, "openapi_url": self.openapi, "mcp_url": self.mcp}


class JournalEntry(BaseModel):
    """One state-changing call of an episode, with the state after it."""

    model_config = ConfigDict(extra="allow")

    seq: int
    step: int | None
    tool: str
    arguments: dict[str, Any]
    result: dict[str, Any] | None = None
    state_after: dict[str, Any] = Field(default_factory=dict)
    transport: Transport | None = None


class Journal(BaseModel):
    """Every state-changing call of an episode: what a domain's oracle answers (the kit
    writes it), RUN_DIR/episodes/<episode>/journal.json (the runner adds `attempt`) and
    what the scorer reads. Defaults and kept unknown fields let old files be read."""

    model_config = ConfigDict(extra="allow")

    episode: str
    domain: str
    task_id: str | None = None
    initial_state: dict[str, Any] = Field(default_factory=dict)
    entries: list[JournalEntry] = Field(default_factory=list)
    final_state: dict[str, Any] = Field(default_factory=dict)
    attempt: str | None = None
    """The attempt whose journal this is (the runner adds it); None in older run directories
    and in what the oracle answers."""


class DrawKey(BaseModel):
    """Everything needed to reproduce one deterministic draw of the fault engine:
    `uniform(key)` gives it back. `tool` is `domain/tool` for call draws and `*` for
    episode-level draws. Unknown fields are kept (old readers read new files)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    seed: int
    episode_key: str
    tool: str
    position: int
    purpose: str


class FaultRecord(BaseModel):
    """The fault that shaped a call, as the engine decides it and the log keeps it.

    `fresh` is False when the call only continues an incident started earlier (a hard
    rate limit, a drift, a blocking window; `incident` names it), True when the fault was
    drawn at this call, None in records written before the field was declared (the scorer
    counts those as fresh). `also` lists other incidents that touched the same call.
    """

    model_config = ConfigDict(extra="allow")

    name: str
    stage: Stage
    recoverable: bool
    params: dict[str, Any] = Field(default_factory=dict)
    draw: DrawKey | None = None
    incident: str | None = None
    fresh: bool | None = None
    also: list[str] = Field(default_factory=list)
