"""Real clients (curl, httpx, Node's fetch, an MCP client) that only know HTTPS_PROXY.

Each talks to `https://api.example.test`, a real HTTPS service on 127.0.0.1 with its own CA,
through `chaosproxy up --forward-port`; the name is pinned with `--allow HOST=ADDR:PORT`,
so nothing resolves it, and the reverse proxy checks the service's certificate against
`--upstream-ca`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from forward_helpers import HOST, Up, curl, log_records

REPO = Path(__file__).resolve().parents[2]
SEARCH = {"origin": "SFO", "dest": "JFK", "date": "2026-03-10"}
URL = f"https://{HOST}/tools/search_flights"


def printed_env(up: Up) -> dict[str, str]:
    """The variables `up` told the user to export."""
    found: dict[str, str] = {}
    for line in up.lines:
        if line.strip().startswith("export "):
            found.update(dict(re.findall(r"(\w+)=(\S+)", line)))
    return found


def test_up_prints_the_client_settings(forward_up: Up) -> None:
    env = printed_env(forward_up)
    assert env["HTTPS_PROXY"] == forward_up.forward
    assert env["SSL_CERT_FILE"] == env["REQUESTS_CA_BUNDLE"] == str(forward_up.ca_bundle)
    assert env["NODE_EXTRA_CA_CERTS"] == str(forward_up.ca_cert)
    ca = forward_up.ca_cert.read_text()
    assert ca.startswith("-----BEGIN CERTIFICATE-----")
    assert forward_up.ca_bundle.read_text().rstrip().endswith(ca.rstrip())
    assert (forward_up.run_dir / "forward" / "mitm" / "mitmproxy-ca.pem").is_file()
    assert not (forward_up.home / ".mitmproxy").exists()


@pytest.mark.parametrize(
    ("args", "episode"),
    [
        (["-H", "X-Chaos-Episode: curl-header"], "curl-header"),
        (["--proxy-user", "curl-user:x"], "curl-user"),
    ],
)
def test_curl_reaches_an_allowed_host(forward_up: Up, args: list[str], episode: str) -> None:
    done = curl(
        forward_up,
        "--cacert",
        str(forward_up.ca_cert),
        "-H",
        "Content-Type: application/json",
        "-d",
        json.dumps(SEARCH),
        *args,
        URL,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["total"] >= 1
    (record,) = log_records(forward_up, episode)
    assert record["domain"] == HOST
    assert record["tool"] == "search_flights"
    assert record["transport"] == "rest"
    assert record["path"] == f"/{HOST}/tools/search_flights"
    assert record["arguments"] == SEARCH
    assert record["step"] == 1
    assert (record["status"], record["upstream_status"]) == (200, 200)


def test_without_an_episode_the_default_is_used(forward_up: Up) -> None:
    before = len(log_records(forward_up, "default"))
    done = curl(forward_up, "--cacert", str(forward_up.ca_cert), f"https://{HOST}/openapi.json")
    assert done.returncode == 0, done.stderr
    assert "openapi" in json.loads(done.stdout)
    after = log_records(forward_up, "default")
    assert len(after) == before + 1
    assert after[-1]["kind"] == "protocol"
    assert after[-1]["path"] == f"/{HOST}/openapi.json"


def test_httpx_with_only_the_printed_variables(forward_up: Up) -> None:
    script = textwrap.dedent(
        f"""
        import json, httpx
        reply = httpx.post({URL!r}, json={SEARCH!r}, headers={{"X-Chaos-Episode": "httpx-1"}})
        print(json.dumps({{"status": reply.status_code, "body": reply.json()}}))
        """
    )
    env = {**os.environ, **printed_env(forward_up)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["status"] == 200 and seen["body"]["total"] >= 1
    (record,) = log_records(forward_up, "httpx-1")
    assert (record["domain"], record["tool"], record["status"]) == (HOST, "search_flights", 200)


@pytest.mark.skipif(
    shutil.which("node") is None and not os.environ.get("CI"), reason="node is not installed"
)
def test_node_fetch_with_only_the_printed_variables(forward_up: Up) -> None:
    if not (REPO / "node_modules" / "undici").is_dir():
        pytest.fail("run scripts/install.sh (npm ci) first: undici is missing")
    script = textwrap.dedent(
        f"""
        import {{ setGlobalDispatcher, EnvHttpProxyAgent }} from "undici";
        setGlobalDispatcher(new EnvHttpProxyAgent());
        const reply = await fetch({json.dumps(URL)}, {{
          method: "POST",
          headers: {{ "content-type": "application/json", "x-chaos-episode": "node-1" }},
          body: JSON.stringify({json.dumps(SEARCH)}),
        }});
        console.log(JSON.stringify({{ status: reply.status, body: await reply.json() }}));
        """
    )
    env = {**os.environ, **printed_env(forward_up)}
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["status"] == 200 and seen["body"]["total"] >= 1
    (record,) = log_records(forward_up, "node-1")
    assert (record["domain"], record["tool"], record["status"]) == (HOST, "search_flights", 200)


def test_mcp_client_over_https_lists_and_calls_tools(forward_up: Up) -> None:
    script = textwrap.dedent(
        f"""
        import asyncio, json, fastmcp

        async def main():
            async with fastmcp.Client("https://{HOST}/mcp", timeout=20) as client:
                tools = [tool.name for tool in await client.list_tools()]
                result = await client.call_tool_mcp("search_flights", {SEARCH!r})
                print(json.dumps({{"tools": tools, "error": result.isError,
                                  "data": result.structuredContent}}))

        asyncio.run(main())
        """
    )
    env = {**os.environ, **printed_env(forward_up)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=90
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert "search_flights" in seen["tools"]
    assert seen["error"] is False and seen["data"]["total"] >= 1
    calls = [r for r in log_records(forward_up, "default") if r["kind"] == "tool_call"]
    assert calls and calls[-1]["transport"] == "mcp"
    assert (calls[-1]["domain"], calls[-1]["tool"]) == (HOST, "search_flights")
    assert calls[-1]["path"] == f"/{HOST}/mcp"
