"""End to end: an agent with its own OpenTelemetry span calls a tool through `chaosproxy up
--otlp-endpoint`, the proxy injects a 429, and a real tracing backend (Arize Phoenix, in
its own virtualenv made by scripts/otel_backend_env.sh) shows the proxy's span of that call
under the agent's span, with the fault attributes. Queried through Phoenix's REST API.

Without the backend's environment the test skips, except under CI=true, where it fails.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

pytestmark = pytest.mark.timeout(420)

REPO = Path(__file__).parents[2]
REQUIREMENTS = REPO / "scripts" / "otel_backend_requirements.txt"
START_TIMEOUT_S = 240.0
ALL_429 = "name: all-429\nfailure_rate: 1.0\nweights: {SoftRateLimit: 1.0}\n"


def _phoenix_python() -> Path:
    override = os.environ.get("CHAOSPROXY_PHOENIX_PYTHON")
    if override:
        return Path(override)
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "chaosproxy" / f"otel-backend-{digest}" / "bin" / "python"


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"tracing backend unavailable under CI: {why}")
    pytest.skip(f"{why} (run scripts/otel_backend_env.sh)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    python = _phoenix_python()
    if not python.is_file():
        _unavailable(f"no Phoenix environment at {python}")
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc = _free_port(), _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (work / "phoenix.log").open("wb")
    process = subprocess.Popen(
        [str(python), "-m", "phoenix.server.main", "serve"],
        env=env,
        cwd=work,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while True:
            if process.poll() is not None:
                tail = (work / "phoenix.log").read_text(errors="replace")[-2000:]
                _unavailable(f"Phoenix exited with {process.returncode}:\n{tail}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                _unavailable(f"Phoenix did not answer {url}/healthz in {START_TIMEOUT_S:.0f} s")
            time.sleep(0.5)
        yield url
    finally:
        _stop(process)
        log.close()


def _up(tmp_path: Path, endpoint: str) -> tuple[subprocess.Popen[str], str]:
    (tmp_path / "all-429.yaml").write_text(ALL_429)
    binary = Path(sys.executable).parent / "chaosproxy"
    process = subprocess.Popen(
        [
            str(binary),
            "up",
            "--domains",
            "travel",
            "--profile",
            "all-429.yaml",
            "--port",
            "0",
            "--run-dir",
            str(tmp_path / "run"),
            "--otlp-endpoint",
            endpoint,
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    seen = []
    url = None
    for line in process.stdout:
        seen.append(line)
        if line.startswith("chaosproxy http://"):
            url = line.split()[1]
        if line.startswith("traces:"):
            assert f"{endpoint}/v1/traces (content: faults)" in line
            assert url is not None
            return process, url
    process.wait(5)
    raise AssertionError("chaosproxy up did not start:\n" + "".join(seen))


def _spans(url: str) -> list[dict[str, Any]]:
    reply = httpx.get(f"{url}/v1/projects/default/spans", params={"limit": 200}, timeout=10)
    reply.raise_for_status()
    return list(reply.json()["data"])


def test_the_injected_429_shows_under_the_agents_span_in_phoenix(
    phoenix: str, tmp_path: Path
) -> None:
    proxy, proxy_url = _up(tmp_path, phoenix)
    try:
        provider = TracerProvider(resource=Resource.create({"service.name": "test-agent"}))
        provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix}/v1/traces"))
        )
        with provider.get_tracer("test-agent").start_as_current_span("agent turn") as turn:
            headers: dict[str, str] = {"X-Chaos-Episode": "e2e-otel"}
            TraceContextTextMapPropagator().inject(headers)
            reply = httpx.post(
                f"{proxy_url}/travel/tools/get_itinerary", json={}, headers=headers, timeout=10
            )
        provider.shutdown()
    finally:
        _stop(proxy)  # `up` flushes its batch of spans as it stops
    assert reply.status_code == 429
    assert proxy.returncode == 0
    agent_trace = f"{turn.get_span_context().trace_id:032x}"
    agent_span = f"{turn.get_span_context().span_id:016x}"
    deadline = time.monotonic() + 30
    while True:
        spans = _spans(phoenix)
        ours = [s for s in spans if s["name"] == "execute_tool get_itinerary"]
        if ours or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert any(s["name"] == "agent turn" for s in spans)
    assert len(ours) == 1, [s["name"] for s in spans]
    span = ours[0]
    assert span["context"]["trace_id"] == agent_trace
    assert span["parent_id"] == agent_span
    assert span["status_code"] == "ERROR"
    attrs = span["attributes"]
    assert attrs["chaosproxy.fault.name"] == "SoftRateLimit"
    assert attrs["chaosproxy.fault.delivered"] is True
    assert attrs["chaosproxy.fault.stage"] == "before"
    assert attrs["chaosproxy.episode.id"] == "e2e-otel"
    assert attrs["chaosproxy.profile"] == "all-429"
    assert attrs["error.type"] == "429"
    assert attrs["gen_ai.tool.name"] == "get_itinerary"
    assert [e["name"] for e in span["events"]] == ["chaosproxy.fault"]
