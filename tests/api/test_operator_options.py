"""The public Environment's operator settings (what `chaosproxy up` and the runner pass):
control API, domains served elsewhere, OpenAPI documents, forward proxy, and the episode
handles the runner drives. Real services and a real proxy on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

import chaosproxy
from chaosproxy.proxy.controlfile import CONTROL_FILE

TASK = "travel-01-book-named-flight"
pytestmark = pytest.mark.timeout(300)


class _Flaky(BaseHTTPRequestHandler):
    """A user's service: POST /tools/ok answers 200, POST /tools/broken answers 500."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        status = 500 if self.path.endswith("/broken") else 200
        data = json.dumps({"path": self.path}).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def crm() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_settings_are_exported_and_documented() -> None:
    for name in ("ControlSettings", "ForwardSettings"):
        assert name in chaosproxy.__all__
        assert getattr(chaosproxy, name).__doc__
    doc = chaosproxy.Environment.__doc__ or ""
    for option in ("services", "openapi", "upstream_ca", "control", "forward"):
        assert f"`{option}`" in doc


@pytest.mark.parametrize(
    ("build", "error", "words"),
    [
        (lambda: chaosproxy.ControlSettings(port=70000), chaosproxy.SetupError, ["70000"]),
        (lambda: chaosproxy.ControlSettings(token=" "), chaosproxy.SetupError, ["token"]),
        (lambda: chaosproxy.ForwardSettings(port=-1), chaosproxy.SetupError, ["-1"]),
        (
            lambda: chaosproxy.Environment(services={"atlantis": "http://127.0.0.1:9"}),
            chaosproxy.UnknownDomainError,
            ["atlantis"],
        ),
        (
            lambda: chaosproxy.Environment(services={"travel": "ftp://x"}),
            chaosproxy.SetupError,
            ["travel", "http://"],
        ),
        (
            lambda: chaosproxy.Environment(
                domains=["travel"], services={"travel": "http://127.0.0.1:9"}
            ),
            chaosproxy.SetupError,
            ["clash", "travel"],
        ),
        (
            lambda: chaosproxy.Environment(
                upstreams={"crm": "http://127.0.0.1:9"}, openapi={"erp": "erp.json"}
            ),
            chaosproxy.SetupError,
            ["openapi", "erp"],
        ),
        (
            lambda: chaosproxy.Environment(
                upstreams={"crm": "http://127.0.0.1:9"}, idle_episodes=0
            ),
            chaosproxy.SetupError,
            ["idle_episodes", "0"],
        ),
        (
            lambda: chaosproxy.Environment(forward=chaosproxy.ForwardSettings()),
            chaosproxy.SetupError,
            ["at least one --allow"],
        ),
        (
            lambda: chaosproxy.Environment(
                upstreams={"crm": "http://127.0.0.1:9"}, upstream_ca="/nonexistent/ca.pem"
            ),
            chaosproxy.SetupError,
            ["no such file"],
        ),
        (
            lambda: chaosproxy.Environment(
                upstreams={"h.test": "http://127.0.0.1:9"},
                forward=chaosproxy.ForwardSettings(allow=["h.test"]),
            ),
            chaosproxy.SetupError,
            ["clash", "h.test"],
        ),
    ],
)
def test_bad_operator_settings_fail_before_anything_starts(
    build: object, error: type[Exception], words: list[str]
) -> None:
    threads = threading.active_count()
    with pytest.raises(error) as caught:
        build()  # type: ignore[operator]
    assert isinstance(caught.value, chaosproxy.ChaosError)
    for word in words:
        assert word in str(caught.value)
    assert threading.active_count() == threads


def test_forward_allow_becomes_upstreams_and_means_no_builtin_domains() -> None:
    env = chaosproxy.Environment(forward=chaosproxy.ForwardSettings(allow=["h.test"]))
    assert env.domains == []
    assert env.upstreams == {"h.test": "https://h.test"}
    assert env.forward_allow == ["https://h.test"]
    assert not env.running


def test_control_settings_token_listener_and_control_file(tmp_path: Path, crm: str) -> None:
    control = chaosproxy.ControlSettings(token="op-secret", write_file=True)
    with chaosproxy.Environment(upstreams={"crm": crm}, run_dir=tmp_path, control=control) as env:
        assert env.token == "op-secret"
        assert env.control_url != env.url and env.control_url.startswith("http://127.0.0.1:")
        access = json.loads((tmp_path / CONTROL_FILE).read_text())
        assert (access["url"], access["token"]) == (env.control_url, "op-secret")
        assert (tmp_path / CONTROL_FILE).stat().st_mode & 0o777 == 0o600
        health = f"{env.control_url}/_chaos/health"
        assert httpx.get(health, timeout=10).status_code == 401
        auth = {"Authorization": "Bearer op-secret"}
        reply = httpx.get(health, headers=auth, timeout=10)
        assert reply.status_code == 200 and reply.json()["services"] == ["crm"]
        assert httpx.get(f"{env.url}/_chaos/health", timeout=10).status_code == 404
        assert env.log_path == tmp_path / "calls.jsonl"
        assert env.forward_url is None and env.forward_settings() == []
    without = chaosproxy.Environment(upstreams={"crm": crm}, run_dir=tmp_path / "b")
    with without:
        assert not (tmp_path / "b" / CONTROL_FILE).exists()
        assert len(without.token) >= 16


def test_a_domain_served_elsewhere_is_proxied_with_its_oracle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`services=`: one environment serves travel; a second proxies it instead of starting
    it, and still resets, journals and judges episodes through travel's oracle."""
    monkeypatch.setenv("CHAOSPROXY_ORACLE_TOKEN", "shared-oracle-token")
    with chaosproxy.Environment(domains=["travel"], profile="lambda0.0") as serving:
        travel = serving.oracle_urls["travel"]
        assert serving.oracle_headers == {"Authorization": "Bearer shared-oracle-token"}
        with chaosproxy.Environment(services={"travel": travel}, profile="lambda0.0") as env:
            assert (env.domains, env.external, env.services) == ([], {"travel": travel}, ["travel"])
            assert env.oracle_urls == {"travel": travel}
            with env.episode(task=TASK) as episode:
                assert episode.url().startswith(f"{env.url}/e/{episode.id}/travel")
                reply = httpx.post(f"{episode.url()}/tools/get_itinerary", json={}, timeout=10)
                assert reply.status_code == 200, reply.text
                assert [c.tool for c in episode.calls()] == ["get_itinerary"]
                assert episode.verdict().success is False
                journal = httpx.get(
                    f"{travel}/_oracle/episodes/{episode.id}/journal",
                    headers=env.oracle_headers,
                    timeout=10,
                )
                assert journal.status_code == 200
            gone = httpx.get(
                f"{travel}/_oracle/episodes/{episode.id}/journal",
                headers=env.oracle_headers,
                timeout=10,
            )
            assert gone.status_code == 404  # ending the episode deleted it in the service


async def test_episode_handles_for_async_drivers(crm: str) -> None:
    """What the runner uses: explicit ids, keys and seeds, every endpoint, service errors
    the proxy did not inject, and an end that does not block the event loop."""
    async with chaosproxy.Environment(
        domains=["travel"], upstreams={"crm": crm}, profile="lambda0.0", seed=3
    ) as env:
        episode = env.episode(id="run~t1", key="k1", seed=11)
        assert (episode.id, episode.key) == ("run~t1", "k1")
        ends = episode.endpoints()
        assert sorted(ends) == ["crm", "travel"]
        assert ends["crm"].rest == f"{env.url}/e/run~t1/crm"
        assert env.endpoints("run~t1") == ends
        assert env.endpoints()["travel"].mcp == f"{env.url}/travel/mcp"
        async with httpx.AsyncClient(timeout=10) as client:
            ok = await client.post(f"{ends['crm'].rest}/tools/ok", json={})
            assert ok.status_code == 200 and episode.service_errors() == 0
            broken = await client.post(f"{ends['crm'].rest}/tools/broken", json={})
            assert broken.status_code == 500
        assert episode.service_errors() == 1
        records = [json.loads(line) for line in env.log_path.read_text().splitlines()]
        assert [(r["episode"], r["episode_key"], r["run_seed"]) for r in records] == [
            ("run~t1", "k1", 3)
        ] * 2
        await episode.aend()
        assert episode.ended and [c.tool for c in episode.calls()] == ["ok", "broken"]
        with pytest.raises(chaosproxy.NotRunningError):
            episode.service_errors()
        again = env.episode(id="run~t1", key="k1")  # an ended id can start afresh
        async with again:
            assert again.service_errors() == 0
        assert again.ended


def test_idle_episodes_bound_reaches_the_proxy(crm: str) -> None:
    """`idle_episodes=1` (`up --idle-episodes 1`): a third idle episode makes the proxy
    forget the least recently used one, which starts afresh when it comes back."""
    with chaosproxy.Environment(
        upstreams={"crm": crm}, profile="lambda0.0", idle_episodes=1
    ) as env:
        for name in ("a", "b", "a"):
            reply = httpx.post(f"{env.url}/e/{name}/crm/tools/ok", json={}, timeout=10)
            assert reply.status_code == 200
        records = [json.loads(line) for line in env.log_path.read_text().splitlines()]
    assert [(r["episode"], r["step"], r.get("episode_restarted")) for r in records] == [
        ("a", 1, None),
        ("b", 1, None),
        ("a", 1, True),
    ]


def _children() -> set[int]:
    """Live child processes of this test process (from /proc)."""
    me, found = str(os.getpid()), set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if fields[1] == me and fields[0] != "Z":
                    found.add(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_an_interrupt_while_starting_leaves_nothing_running() -> None:
    """Ctrl-C while the services are still starting: the start is undone, no child process
    or thread is left (the services child takes well over 0.2 s to come up)."""
    before_children, before_threads = _children(), set(threading.enumerate())

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    env = chaosproxy.Environment(domains=["travel"], profile="lambda0.0")
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            env.start()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not env.running
    deadline = time.monotonic() + 15
    while _children() - before_children and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _children() - before_children == set()
    assert set(threading.enumerate()) <= before_threads


CRM_OPENAPI_YAML = """\
openapi: 3.0.3
info: {title: crm, version: '1'}
paths:
  /tools/ok:
    post:
      operationId: markOk
"""


def test_an_openapi_yaml_names_the_tools_and_a_missing_one_stops_the_start(
    tmp_path: Path, crm: str
) -> None:
    """README's `openapi={"crm": "crm.yaml"}`: the YAML is read (the tool is its
    operationId, not the `/tools/{name}` guess); a file that is not there is an error."""
    document = tmp_path / "crm.yaml"
    document.write_text(CRM_OPENAPI_YAML, encoding="utf-8")
    with (
        chaosproxy.Environment(
            upstreams={"crm": crm}, openapi={"crm": document}, profile="lambda0.0"
        ) as env,
        env.episode() as episode,
    ):
        assert httpx.post(f"{episode.url('crm')}/tools/ok", json={}, timeout=10).is_success
        assert [c.tool for c in episode.calls()] == ["markOk"]
    missing = chaosproxy.Environment(
        upstreams={"crm": crm}, openapi={"crm": tmp_path / "nope.yaml"}, profile="lambda0.0"
    )
    with pytest.raises(chaosproxy.StartError) as caught:
        missing.start()
    assert "upstream 'crm'" in str(caught.value) and "nope.yaml): no such file" in str(caught.value)
    assert not missing.running


def test_up_refuses_an_openapi_file_it_cannot_use(tmp_path: Path, crm: str) -> None:
    document = tmp_path / "shop-openapi.yaml"
    document.write_text("swagger: '2.0'\npaths: {}\n", encoding="utf-8")
    args = ["up", "--port", "0", "--domains", "none", "--run-dir", str(tmp_path / "run")]
    args += ["--upstream", f"shop={crm}", "--openapi", f"shop={document}"]
    result = subprocess.run(
        [sys.executable, "-c", "from chaosproxy.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"upstream 'shop' ({document}): not an OpenAPI 3.x document" in result.stderr
    assert "Traceback" not in result.stderr
