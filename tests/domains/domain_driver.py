"""Drive one fresh episode of a served domain over REST, as the domain tests do."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel

StateT = TypeVar("StateT", bound=BaseModel)


class RestEpisode(Generic[StateT]):
    """One episode: tool calls carry its id and a step number, oracle reads are typed."""

    def __init__(self, http: httpx.AsyncClient, base: str, state_model: type[StateT]) -> None:
        self.http, self.base, self.state_model = http, base, state_model
        self.id = f"test-{uuid.uuid4().hex[:10]}"
        self.step = 0

    async def reset(self, task_id: str | None = None) -> None:
        body = {"task_id": task_id} if task_id else {}
        response = await self.http.post(f"{self.base}/_oracle/episodes/{self.id}/reset", json=body)
        assert response.status_code == 200, response.text

    async def raw(self, tool: str, body: Any) -> httpx.Response:
        self.step += 1
        headers = {"X-Chaos-Episode": self.id, "X-Chaos-Step": str(self.step)}
        return await self.http.post(f"{self.base}/tools/{tool}", json=body, headers=headers)

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        response = await self.raw(tool, arguments)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def oracle(self, what: str) -> dict[str, Any]:
        response = await self.http.get(f"{self.base}/_oracle/episodes/{self.id}/{what}")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def state(self) -> StateT:
        return self.state_model.model_validate(await self.oracle("state"))


@asynccontextmanager
async def fresh_episode(
    base: str, state_model: type[StateT], timeout: float = 20.0
) -> AsyncIterator[RestEpisode[StateT]]:
    """A reset episode on the domain served at `base`."""
    async with httpx.AsyncClient(timeout=timeout) as http:
        episode = RestEpisode(http, base, state_model)
        await episode.reset()
        yield episode


@asynccontextmanager
async def episode_client(base: str, episode: str) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client bound to `base` and to a freshly reset episode (via its header)."""
    async with httpx.AsyncClient(base_url=base, headers={"X-Chaos-Episode": episode}) as client:
        reset = await client.post(f"/_oracle/episodes/{episode}/reset", json={})
        assert reset.status_code == 200, reset.text
        yield client


async def call(http: httpx.AsyncClient, tool: str, **body: Any) -> dict[str, Any]:
    """A tool call that must succeed; its JSON result."""
    response = await http.post(f"/tools/{tool}", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result
