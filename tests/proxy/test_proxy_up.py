"""`chaosproxy up` in a subprocess: starts the built-in domains, serves REST, MCP (also to a
Node client) and the control API, and shuts down cleanly on SIGINT and SIGTERM."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from proxy_helpers import read_log
from proxy_subprocess import CLI, start_up

from chaosproxy.proxy.controlfile import CONTROL_FILE, read_control_file
from chaosproxy.records import CONFIG_FILE, RunConfig

REPO = Path(__file__).resolve().parents[2]
NODE_SDK = REPO / "node_modules" / "@modelcontextprotocol" / "sdk"
NODE_CLIENT = REPO / "tests" / "node" / "mcp_list_and_call.mjs"


def _urls_of(service: str, printed: list[str]) -> list[str]:
    """The URLs `up` printed for a service: one row (a wide terminal) or one per line under
    its name (narrower than a row of whole URLs, as a pipe's 100 columns here)."""
    at = next(i for i, line in enumerate(printed) if line.split()[:1] == [service])
    row = printed[at].split()
    if len(row) > 1:
        return row[1:]
    urls = []
    for line in printed[at + 1 :]:
        if not line.startswith("  "):
            break
        urls.append(line.split()[1])
    return urls


def _endpoint_rows(printed: list[str]) -> dict[str, list[str]]:
    """{service: [base URL, OpenAPI or "-", MCP or "-"]} from either layout of the table."""
    rows: dict[str, list[str]] = {}
    table = any(line.split()[:3] == ["service", "base", "URL"] for line in printed)
    for at, line in enumerate(printed):
        cells = line.split()
        if not cells or line.startswith(" ") or ":" in cells[0] or cells[0] == "service":
            continue
        if table and len(cells) == 4:
            rows[cells[0]] = cells[1:]
        elif not table and len(cells) == 1:
            labelled = {}
            for below in printed[at + 1 :]:
                if not below.startswith("  "):
                    break
                label, found = below.split()[:2]
                labelled[label] = found
            if "REST" in labelled:
                rows[cells[0]] = [
                    labelled["REST"],
                    labelled.get("OpenAPI", "-"),
                    labelled.get("MCP", "-"),
                ]
    return rows


@pytest.mark.timeout(90)
@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_up_serves_and_stops_cleanly(tmp_path: Path, stop_signal: signal.Signals) -> None:
    process, url = start_up(
        ["--profile", "lambda0.0", "--domains", "travel", "--seed", "5"], tmp_path
    )
    try:
        assert process.stdout is not None
        printed = []
        while not printed or not printed[-1].startswith("Ctrl-C"):
            printed.append(process.stdout.readline())
        access = read_control_file(tmp_path)
        assert any(access.token in line for line in printed if line.startswith("token:"))
        assert _urls_of("travel", printed) == [
            f"{url}/travel",
            f"{url}/travel/openapi.json",
            f"{url}/travel/mcp",
        ]
        assert all(len(line.rstrip("\n")) <= 100 for line in printed if "http" in line)
        assert (tmp_path / CONTROL_FILE).stat().st_mode & 0o777 == 0o600
        assert access.url != url and access.url.startswith("http://127.0.0.1:")
        with httpx.Client(timeout=10) as client:
            assert client.get(f"{access.url}/_chaos/health").status_code == 401
            assert client.get(f"{url}/_chaos/health").status_code == 404
            health = client.get(f"{access.url}/_chaos/health", headers=access.headers).json()
            assert health["status"] == "ok" and health["services"] == ["travel"]
            openapi = client.get(f"{url}/e/u1/travel/openapi.json").json()
            assert openapi["servers"] == [{"url": "/e/u1/travel"}]
            response = client.post(
                f"{url}/e/u1/travel/tools/escalate_to_human", json={"reason": "proxy test"}
            )
            assert response.status_code == 200, response.text
            assert client.get(f"{url}/support/tools").status_code == 404
        if NODE_SDK.is_dir() and shutil.which("node"):
            node = subprocess.run(
                [
                    "node",
                    str(NODE_CLIENT),
                    f"{url}/e/n1/travel/mcp",
                    "escalate_to_human",
                    json.dumps({"reason": "from node"}),
                ],
                capture_output=True,
                text=True,
                timeout=30,
                cwd=REPO,
            )
            assert node.returncode == 0, node.stderr
            seen = json.loads(node.stdout.strip().splitlines()[-1])
            assert "escalate_to_human" in seen["tools"] and seen["isError"] is False
    finally:
        process.send_signal(stop_signal)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "stopped" in out
    assert "Traceback" not in err
    log = read_log(tmp_path)
    tool_calls = [r for r in log if r.kind == "tool_call"]
    assert [r.episode for r in tool_calls][:1] == ["u1"]
    assert any(r.episode == "n1" and r.transport == "mcp" for r in tool_calls) == NODE_SDK.is_dir()
    config = RunConfig.model_validate_json((tmp_path / CONFIG_FILE).read_text())
    assert config.kind == "up" and config.seed == 5 and "lambda0.0" in config.profiles


@pytest.mark.skipif(not NODE_SDK.is_dir(), reason="node_modules/@modelcontextprotocol/sdk missing")
def test_node_sdk_present_means_node_runs() -> None:
    assert shutil.which("node") is not None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--domains", "atlantis"], "unknown domain 'atlantis'"),
        (["--upstream", "no-equals"], "expected name=URL"),
        (["--upstream", "x=ftp://host"], "must start with http"),
        (["--profile", "lambda9"], "no shipped profile"),
    ],
)
def test_up_rejects_bad_flags(tmp_path: Path, args: list[str], message: str) -> None:
    from click.testing import CliRunner

    from chaosproxy.cli import main

    result = CliRunner().invoke(main, ["up", "--run-dir", str(tmp_path), *args])
    assert result.exit_code == 2
    assert message in result.output


def test_up_reports_a_port_in_use(tmp_path: Path) -> None:
    import socket

    from click.testing import CliRunner

    from chaosproxy.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            main,
            [
                "up",
                "--port",
                str(port),
                "--domains",
                "none",
                "--upstream",
                "x=http://127.0.0.1:9",
                "--run-dir",
                str(tmp_path),
            ],
        )
    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.output


@pytest.mark.timeout(90)
def test_up_warns_of_routes_for_an_upstream_it_does_not_serve(tmp_path: Path) -> None:
    profile = tmp_path / "shared.yaml"
    profile.write_text(
        "routes:\n  nosuch: {'GET /a/{id}': get_a}\n  shop: {'GET /b': get_b}\n", encoding="utf-8"
    )
    args = ["--profile", str(profile), "--domains", "none", "--upstream", "shop=http://127.0.0.1:9"]
    process, _url = start_up(args, tmp_path / "run")
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: profile 'shared' has routes: for 'nosuch', which is not an upstream here "
        "(upstreams: shop); those routes are not used"
    ]


@pytest.mark.timeout(90)
def test_up_rejects_a_profile_route_that_is_not_a_method_and_a_path(tmp_path: Path) -> None:
    profile = tmp_path / "typo.yaml"
    profile.write_text("routes:\n  shop: {'GETT /a': get_a}\n", encoding="utf-8")
    args = ["--profile", str(profile), "--domains", "none", "--upstream", "shop=http://127.0.0.1:9"]
    result = subprocess.run(
        [sys.executable, "-c", CLI, "up", "--port", "0", "--run-dir", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stdout
    assert "route 'GETT /a' of upstream 'shop'" in result.stderr


class _Service(BaseHTTPRequestHandler):
    """A user's service: /openapi.json is a 3.x document when the server has one, else 404."""

    def do_GET(self) -> None:
        document = getattr(self.server, "document", None)
        data = json.dumps(document).encode() if document else b'{"error": "not found"}'
        self.send_response(200 if document and self.path == "/openapi.json" else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.timeout(90)
def test_up_lists_openapi_and_mcp_only_where_they_exist(tmp_path: Path) -> None:
    """A plain REST upstream (404 at /openapi.json), a model endpoint and a forwarded host
    get no OpenAPI or MCP line; one serving its document and one given --openapi do."""
    document = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}}
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), _Service) for _ in range(4)]
    servers[1].document = document  # type: ignore[attr-defined]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    plain, served, given, llm = (f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
    given_file = tmp_path / "given.yaml"
    given_file.write_text("openapi: 3.1.0\ninfo: {title: g, version: '1'}\npaths: {}\n")
    args = ["--domains", "none", "--profile", "lambda0.0", "--forward-port", "0"]
    args += ["--upstream", f"plain={plain}", "--upstream", f"served={served}"]
    args += ["--upstream", f"given={given}", "--openapi", f"given={given_file}"]
    args += [
        "--upstream",
        f"llm={llm}/v1",
        "--allow",
        f"h.test=127.0.0.1:{servers[0].server_address[1]}",
    ]
    try:
        process, url = start_up(args, tmp_path / "run")
        assert process.stdout is not None
        printed: list[str] = []
        while not printed or not printed[-1].startswith("Ctrl-C"):
            printed.append(process.stdout.readline())
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    rows = _endpoint_rows(printed)
    assert rows["plain"] == [f"{url}/plain", "-", "-"]
    assert rows["llm"] == [f"{url}/llm", "-", "-"]
    assert rows["served"] == [f"{url}/served", f"{url}/served/openapi.json", "-"]
    assert rows["given"] == [f"{url}/given", str(given_file), "-"]
    assert rows["h.test"][1:] == ["-", "-"]
