"""The oracle's bearer token (issue 13 #6): off loopback `serve` always has one; with one,
every `/_oracle/` route answers 401 without it, and the tools stay open."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from chaosproxy.domains.kit.client import OracleClient
from chaosproxy.domains.kit.declare import ToolCallFailed
from chaosproxy.domains.kit.testing import serve_app
from kit_toy import domain

from chaosproxy.commands.domains import is_loopback, oracle_token_for

TOKEN = "s3cret-token"
ORACLE_ROUTES = [
    ("GET", "/_oracle/episodes"),
    ("POST", "/_oracle/episodes/e1/reset"),
    ("GET", "/_oracle/episodes/e1/state"),
    ("GET", "/_oracle/episodes/e1/journal"),
    ("GET", "/_oracle/episodes/e1/diff"),
    ("DELETE", "/_oracle/episodes/e1"),
    ("POST", "/_oracle/diff"),
    ("GET", "/_oracle/tasks"),
    ("GET", "/_oracle/hints"),
]


@pytest.fixture(scope="module")
def guarded_url() -> Iterator[str]:
    with serve_app(domain.asgi_app(oracle_token=TOKEN)) as url:
        yield url


@pytest.mark.parametrize(("method", "path"), ORACLE_ROUTES)
@pytest.mark.parametrize("given", [None, "Bearer wrong", f"Basic {TOKEN}", TOKEN])
async def test_every_oracle_route_needs_the_token(
    guarded_url: str, method: str, path: str, given: str | None
) -> None:
    headers = {"Authorization": given} if given is not None else {}
    async with httpx.AsyncClient(base_url=guarded_url) as http:
        response = await http.request(method, path, headers=headers, json={})
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["error"]["field"] == "Authorization"


async def test_with_the_token_the_oracle_works_and_tools_need_none(guarded_url: str) -> None:
    async with OracleClient(guarded_url, token=TOKEN) as oracle, httpx.AsyncClient() as http:
        await oracle.reset("tok-1")
        call = await http.post(
            f"{guarded_url}/tools/set_note", json={"key": "a", "value": "b"},
            headers={"X-Chaos-Episode": "tok-1"},
        )  # fmt: skip
        state = await oracle.state("tok-1")
        await oracle.delete("tok-1")
    assert call.status_code == 200 and state["notes"] == {"a": "b"}
    async with OracleClient(guarded_url) as anonymous:
        with pytest.raises(ToolCallFailed) as refused:
            await anonymous.tasks()
    assert refused.value.status == 401


@pytest.mark.parametrize(
    ("host", "given", "required"),
    [
        ("127.0.0.1", None, False),
        ("localhost", None, False),
        ("::1", None, False),
        ("127.0.0.2", None, False),
        ("0.0.0.0", None, True),
        ("192.168.1.5", None, True),
        ("::", None, True),
        ("example.org", None, True),
        ("127.0.0.1", "mine", True),
    ],
)
def test_serve_requires_a_token_off_loopback(host: str, given: str | None, required: bool) -> None:
    token, generated = oracle_token_for(host, given)
    assert (token is not None) is required
    assert generated == (required and given is None)
    if given is not None:
        assert token == given
    assert is_loopback(host) == (host in {"127.0.0.1", "localhost", "::1", "127.0.0.2"})


def test_serve_enforces_a_token_from_the_environment() -> None:
    command = [sys.executable, "-c", "from chaosproxy.cli import main; main()", "serve",
               "weather", "--port", "0"]  # fmt: skip
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "CHAOSPROXY_ORACLE_TOKEN": TOKEN},
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(7)]
        text = "".join(lines)
        match = re.search(r"oracle\s+(http://127\.0\.0\.1:\d+)/_oracle/", text)
        assert match, lines
        assert "oracle token  (as given)" in text  # a given token is not echoed
        base = match.group(1)
        for _ in range(100):
            try:
                without = httpx.get(f"{base}/_oracle/tasks", timeout=20)
                break
            except httpx.ConnectError:
                time.sleep(0.05)
        with_token = httpx.get(
            f"{base}/_oracle/tasks", headers={"Authorization": f"Bearer {TOKEN}"}
        )
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert without.status_code == 401
    assert with_token.status_code == 200 and with_token.json()["domain"] == "weather"
