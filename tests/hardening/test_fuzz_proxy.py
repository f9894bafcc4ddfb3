"""A bounded fuzz through the proxy at lambda0.0 (issue 13): schemathesis over every domain's
OpenAPI document as the proxy serves it, malformed MCP JSON-RPC, and raw HTTP.

One `chaosproxy up` (all built-in domains, profile lambda0.0: nothing is injected) serves
the whole module. Every reply must be below 500, every 4xx must say what was wrong (a
service's 4xx names the field: `error.field`/`fields`, or the method or path it does not
serve; the proxy's own names the problem in `error.message` or a JSON-RPC error), and
afterwards every line of calls.jsonl must still be a valid record. The default budget keeps
the module near a minute of CI; `CHAOSPROXY_FUZZ_EXAMPLES=1000` runs a long local mode.
Generation is derandomized, so a CI failure reproduces with the same command.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from chaosproxy.domains.registry import domain_names
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import Case, GenerationMode

from chaosproxy.records import CALLS_FILE, CallRecord, read_jsonl

CLI = "from chaosproxy.cli import main; main()"
EXAMPLES = int(os.environ.get("CHAOSPROXY_FUZZ_EXAMPLES", "10"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    run_dir = tmp_path_factory.mktemp("fuzz-run")
    process = subprocess.Popen(
        [sys.executable, "-c", CLI, "up", "--port", "0", "--run-dir", str(run_dir),
         "--profile", "lambda0.0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.match(r"chaosproxy (http://127\.0\.0\.1:\d+)", line)
        assert match is not None, line
        yield match.group(1), run_dir
    finally:
        process.terminate()
        process.wait(timeout=30)
    # nothing already recorded is lost: every line is still a valid record
    records = list(read_jsonl(run_dir / CALLS_FILE, CallRecord))
    assert records and all(r.fault is None for r in records)


ROUTE_ERRORS = {"not_found", "method_not_allowed"}
"""A service's refusals of the method or path itself: the message names them, no field."""


def wrong_reply(status: int, text: str, where: str) -> str | None:
    """What is wrong with this reply, if anything (None: fine)."""
    if status >= 500:
        return f"{status} for {where}: {text[:300]}"
    if status < 400:
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return f"{status} without a JSON body for {where}: {text[:200]!r}"
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return f"{status} without an error object for {where}: {text[:200]}"
    if "code" in error and body.get("jsonrpc") == "2.0":
        return None if error.get("message") else f"{status} JSON-RPC error without a message"
    if error.get("source") == "chaosproxy" or error.get("type") in ROUTE_ERRORS:
        return None if error.get("message") else f"{status} error without a message"
    if not (error.get("field") or error.get("fields")):
        return f"{status} names no field for {where}: {error}"
    return None


def test_the_judge_catches_what_it_should() -> None:
    """The fuzz's verdicts, on replies worked out by hand."""
    assert wrong_reply(500, "{}", "x") is not None
    assert wrong_reply(422, '{"error": {"type": "validation_error"}}', "x") is not None
    assert wrong_reply(400, "Bad Request", "x") is not None
    assert wrong_reply(400, '{"jsonrpc": "2.0", "error": {"code": -32600}}', "x") is not None
    assert wrong_reply(422, '{"error": {"field": "city", "message": "m"}}', "x") is None
    assert wrong_reply(400, '{"error": {"source": "chaosproxy", "message": "m"}}', "x") is None
    rpc = '{"jsonrpc": "2.0", "error": {"code": -32700, "message": "m"}}'
    assert wrong_reply(400, rpc, "x") is None
    assert wrong_reply(405, '{"error": {"type": "method_not_allowed"}}', "x") is not None
    allowed = '{"error": {"type": "method_not_allowed", "message": "m"}}'
    assert wrong_reply(405, allowed, "x") is None
    assert wrong_reply(200, "anything", "x") is None


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize("domain", domain_names())
def test_openapi_through_the_proxy(proxy: tuple[str, Path], domain: str, mode: Any) -> None:
    url, _ = proxy
    document = requests.get(f"{url}/{domain}/openapi.json", timeout=60).json()
    assert document["servers"] == [{"url": f"/{domain}"}]  # the proxy points clients at itself
    schema = schemathesis.openapi.from_dict(document)
    found: list[str] = []
    session = requests.Session()

    @FUZZ
    @given(case=schema.as_strategy(mode, headers={"X-Chaos-Episode": f"fuzz-{domain}"}))
    def run(case: Case) -> None:
        reply = case.call(base_url=f"{url}/{domain}", session=session, timeout=60)
        where = f"{case.method} {case.path} body={json.dumps(case.body, default=str)[:200]}"
        wrong = wrong_reply(reply.status_code, reply.text, where)
        if wrong is not None and len(found) < 10:
            found.append(wrong)

    run()
    assert found == []


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
RPC_ID = st.none() | st.integers() | st.text(max_size=8) | st.floats(allow_nan=False) | JSON
ARGUMENTS = st.fixed_dictionaries(
    {},
    optional={
        "city": JSON | st.sampled_from(["Dubai", "Oslo"]),
        "date": JSON | st.just("2026-03-11"),
        "days": JSON | st.integers(),
        "units": JSON | st.sampled_from(["metric", "imperial"]),
        "origin": JSON,
        "dest": JSON,
    },
)
CALL = st.fixed_dictionaries(
    {
        "jsonrpc": st.just("2.0"),
        "id": RPC_ID,
        "method": st.just("tools/call"),
        "params": st.fixed_dictionaries(
            {
                "name": st.sampled_from(
                    ["list_cities", "get_forecast", "get_current_weather", "search_flights"]
                )
                | JSON,
                "arguments": ARGUMENTS | JSON,
            },
            optional={"_meta": JSON},
        ),
    }
)
MESSAGE = CALL | st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]) | JSON,
        "id": RPC_ID,
        "method": st.sampled_from(["tools/call", "tools/list", "initialize", "nope"]) | JSON,
        "params": JSON,
    },
)


def mangle(message: bytes, cut: int, junk: bytes) -> bytes:
    return message[: cut % (len(message) + 1)] + junk


MCP_BODY = (
    MESSAGE.map(lambda m: json.dumps(m).encode())
    | st.lists(MESSAGE, max_size=3).map(lambda m: json.dumps(m).encode())
    | st.builds(
        mangle,
        MESSAGE.map(lambda m: json.dumps({"jsonrpc": "2.0", **m}).encode()),
        st.integers(0, 200),
        st.binary(max_size=12),
    )
    | st.sampled_from(
        [
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_cities",'
            b'"arguments":{"x":' + b"9" * 5000 + b"}}}",
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + b"[" * 300,
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\udc00"}}',
            b"",
            b"\xff\xfe\x00",
        ]
    )
)


def mcp_session(session: requests.Session, endpoint: str) -> str:
    """Initialize an MCP session, so the fuzzed messages reach the tools, not the handshake."""
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"},
        },
    }
    reply = session.post(endpoint, json=hello, headers=MCP_HEADERS, timeout=60)
    assert reply.status_code == 200, reply.text
    sid = reply.headers["Mcp-Session-Id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {**MCP_HEADERS, "Mcp-Session-Id": sid}
    assert session.post(endpoint, json=done, headers=headers, timeout=60).status_code < 300
    return sid


@pytest.mark.timeout(300)
@pytest.mark.parametrize("domain", ["weather", "travel"])
def test_malformed_mcp_json_rpc(proxy: tuple[str, Path], domain: str) -> None:
    url, _ = proxy
    found: list[str] = []
    session = requests.Session()
    endpoint = f"{url}/e/fuzz-mcp/{domain}/mcp"
    headers = {**MCP_HEADERS, "Mcp-Session-Id": mcp_session(session, endpoint)}

    @settings(FUZZ, max_examples=EXAMPLES * 4)
    @given(body=MCP_BODY)
    def run(body: bytes) -> None:
        reply = session.post(endpoint, data=body, headers=headers, timeout=60)
        text = reply.text
        if reply.headers.get("Content-Type", "").startswith("text/event-stream"):
            text = "".join(line[5:] for line in text.splitlines() if line.startswith("data:"))
        wrong = wrong_reply(reply.status_code, text, f"MCP body {body[:200]!r}")
        if wrong is not None and len(found) < 10:
            found.append(wrong)

    run()
    assert found == []


TOKEN = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=12)
REQUEST_LINE = st.tuples(
    st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]) | TOKEN,
    st.sampled_from(["/weather/tools/list_cities", "/e/x/weather/mcp", "/", "/e/", "/%00"])
    | TOKEN.map(lambda t: "/" + t),
    st.sampled_from(["HTTP/1.1", "HTTP/1.0"]) | TOKEN,
)
HEADER = st.tuples(TOKEN, st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40))


def raw_exchange(port: int, data: bytes) -> bytes:
    """The server's reply (it closes: `Connection: close`); b"" if it waits for more."""
    chunks = []
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        sock.settimeout(3)
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            pass  # e.g. a fuzzed Transfer-Encoding: the server waits for a body
        except ConnectionResetError:
            pass
    return b"".join(chunks)


@pytest.mark.timeout(300)
def test_raw_http(proxy: tuple[str, Path]) -> None:
    url, _ = proxy
    port = int(url.rsplit(":", 1)[1])
    found: list[str] = []
    statuses: list[int] = []

    @FUZZ
    @given(line=REQUEST_LINE, headers=st.lists(HEADER, max_size=5), body=st.binary(max_size=64))
    def run(line: tuple[str, str, str], headers: list[tuple[str, str]], body: bytes) -> None:
        head = " ".join(line) + "\r\nHost: x\r\nConnection: close\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers)
        data = head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body
        reply = raw_exchange(port, data)
        if not reply:
            return  # the connection closed without a reply: nothing 5xx, nothing to name
        status_line, _, rest = reply.partition(b"\r\n")
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            found.append(f"not an HTTP reply to {data[:200]!r}: {reply[:200]!r}")
            return
        statuses.append(int(parts[1]))
        text = rest.partition(b"\r\n\r\n")[2].decode("utf-8", "replace")
        wrong = wrong_reply(int(parts[1]), text or "{}", f"raw {data[:200]!r}")
        if wrong is not None and len(found) < 10 and line[0] != "HEAD":
            found.append(wrong)

    run()
    assert found == []
    assert len(statuses) >= EXAMPLES // 2, "most raw requests got no reply at all"
