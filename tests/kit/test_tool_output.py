"""A tool's odd output is never a 500 (issue 26, item 2).

The agent's input can reach a tool's result (the coding sandbox returns what a snippet
printed): text that is not valid Unicode is escaped, a value JSON cannot carry is the call's
error with a 4xx, on REST and MCP alike, and the state is left as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import fastmcp
import httpx
import pytest
from chaosproxy.domains.kit import Domain, DomainState, ToolError
from chaosproxy.domains.kit.testing import serve_app
from fastmcp.client.transports import StreamableHttpTransport
from pydantic import BaseModel, Field

Kind = Literal["surrogate", "nan", "deep", "refusal", "plain"]


class Echo(DomainState):
    calls: int = 0


class Odd(BaseModel):
    text: str
    number: float
    nested: Any = None
    keys: dict[str, int] = Field(default_factory=dict)


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


domain: Domain[Echo] = Domain(
    name="oddecho", title="Odd echo", state_model=Echo, default_state=Echo, description="test"
)


@domain.tool()
def odd(state: Echo, kind: Annotated[Kind, Field(description="What to return")]) -> Odd:
    """Return an odd result after changing the state."""
    state.calls += 1
    if kind == "surrogate":
        return Odd(text="a\ud800b", number=1.0, keys={"k\udfff": 1}, nested=["\ud83d"])
    if kind == "nan":
        return Odd(text="x", number=float("nan"))
    if kind == "deep":
        return Odd(text="x", number=1.0, nested=_nested(200_000))
    if kind == "refusal":
        raise ToolError("no such thing as 'a\ud800b'", status=409)
    return Odd(text="café \U0001f600", number=2.5)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_app(domain.asgi_app()) as base:
        yield base


def _rest(url: str, kind: str, episode: str) -> httpx.Response:
    return httpx.post(
        f"{url}/tools/odd", json={"kind": kind}, headers={"X-Chaos-Episode": episode}, timeout=30
    )


def _calls(url: str, episode: str) -> int:
    state = httpx.get(f"{url}/_oracle/episodes/{episode}/state", timeout=30).json()
    calls: int = state["calls"]
    return calls


def test_text_that_is_not_unicode_is_escaped(url: str) -> None:
    response = _rest(url, "surrogate", "odd-s")
    assert response.status_code == 200, response.text
    body = json.loads(response.content.decode("utf-8"))
    assert body["text"] == "a\\ud800b"
    [(key, count)] = body["keys"].items()  # pydantic itself re-encodes a key, lossily
    assert key.startswith("k") and count == 1
    assert body["nested"] == ["\\ud83d"]
    assert _calls(url, "odd-s") == 1


def test_a_refusal_quoting_odd_text_is_escaped(url: str) -> None:
    response = _rest(url, "refusal", "odd-r")
    assert response.status_code == 409, response.text
    error = json.loads(response.content.decode("utf-8"))["error"]
    assert error == {"type": "tool_error", "message": "no such thing as 'a\\ud800b'"}


def test_valid_results_are_unchanged(url: str) -> None:
    response = _rest(url, "plain", "odd-p")
    assert response.status_code == 200, response.text
    assert response.json() == {"text": "café \U0001f600", "number": 2.5, "nested": None, "keys": {}}


@pytest.mark.parametrize(
    ("kind", "fragment"),
    [
        ("nan", "number is nan"),
        ("deep", "depth"),
    ],
)
def test_results_json_cannot_carry_are_the_calls_error(url: str, kind: str, fragment: str) -> None:
    episode = f"odd-{kind.replace('_', '-')}"
    response = _rest(url, kind, episode)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["type"] == "unsendable_result" and fragment in error["message"], error
    assert "changed nothing" in error["message"]
    assert _calls(url, episode) == 0


def test_escaping_is_bounded_in_depth() -> None:
    """Plain results JSON can encode pass unchanged at any depth it handles; one that must be
    rebuilt to escape its text is refused past MAX_RESULT_DEPTH rather than overflowing."""
    from chaosproxy.domains.kit.edge import MAX_RESULT_DEPTH, UnsendableResult, sendable

    plain = _nested(MAX_RESULT_DEPTH + 100)
    assert sendable(plain) is plain
    assert sendable([[["\ud800"]]]) == [[["\\ud800"]]]
    with pytest.raises(UnsendableResult, match=f"deeper than {MAX_RESULT_DEPTH} levels"):
        sendable([_nested(MAX_RESULT_DEPTH + 1), "\ud800"])
    with pytest.raises(UnsendableResult, match="is inf"):
        sendable({"a": [1.0, float("inf")]})


async def test_mcp_gets_the_same(url: str) -> None:
    transport = StreamableHttpTransport(f"{url}/mcp", headers={"X-Chaos-Episode": "odd-mcp"})
    async with fastmcp.Client(transport) as client:
        escaped = await client.call_tool("odd", {"kind": "surrogate"})
        assert not escaped.is_error
        assert escaped.structured_content is not None
        assert escaped.structured_content["text"] == "a\\ud800b"
        refused = await client.call_tool("odd", {"kind": "nan"}, raise_on_error=False)
        assert refused.is_error
        assert "unsendable_result" in refused.content[0].text  # type: ignore[union-attr]
