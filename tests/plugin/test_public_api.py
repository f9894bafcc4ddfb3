"""The public API's documented behaviour: real services, a real proxy, real HTTP and MCP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import fastmcp
import httpx
import pytest
from chaosproxy.domains.kit.client import RestToolClient
from chaosproxy.domains.registry import get_domain
from plugin_helpers import echo_service

import chaosproxy

TASK = "travel-01-book-named-flight"
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def env() -> Iterator[chaosproxy.Environment]:
    with chaosproxy.Environment(domains=["travel"], profile="lambda0.0", seed=7) as running:
        yield running


def _read(url: str, times: int) -> list[int]:
    codes = []
    for _ in range(times):
        try:
            codes.append(httpx.post(f"{url}/tools/get_itinerary", json={}, timeout=10).status_code)
        except httpx.HTTPError:
            codes.append(0)
    return codes


def test_import_is_light() -> None:
    heavy = "('chaosproxy.api', 'aiohttp', 'httpx', 'pydantic')"
    code = f"import chaosproxy, sys; print([m for m in {heavy} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert chaosproxy.Environment is chaosproxy.api.Environment
    assert "Environment" in dir(chaosproxy)


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"profile": "lambda9"}, chaosproxy.ProfileError, ["lambda9", "did you mean"]),
        ({"profile": "missing.yaml"}, chaosproxy.ProfileError, ["missing.yaml"]),
        (
            {"domains": ["travel", "atlantis"]},
            chaosproxy.UnknownDomainError,
            ["atlantis", "travel"],
        ),
        ({"upstreams": {"crm": "ftp://x"}}, chaosproxy.SetupError, ["crm", "http://"]),
        (
            {"domains": ["travel"], "upstreams": {"travel": "http://127.0.0.1:1"}},
            chaosproxy.SetupError,
            ["clash", "travel"],
        ),
        ({"domains": []}, chaosproxy.SetupError, ["nothing to serve"]),
    ],
)
def test_bad_settings_fail_before_anything_starts(
    kwargs: dict[str, object], error: type[Exception], words: list[str]
) -> None:
    threads = threading.active_count()
    with pytest.raises(error) as caught:
        chaosproxy.Environment(**kwargs)  # type: ignore[arg-type]
    assert isinstance(caught.value, chaosproxy.ChaosError)
    for word in words:
        assert word in str(caught.value)
    assert threading.active_count() == threads


def test_a_port_in_use_is_a_clear_error_and_leaves_nothing_running() -> None:
    threads = set(threading.enumerate())
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = chaosproxy.Environment(upstreams={"crm": "http://127.0.0.1:9"}, port=port)
        with pytest.raises(chaosproxy.PortInUseError) as caught:
            env.start()
    assert isinstance(caught.value, chaosproxy.ChaosError)
    assert isinstance(caught.value, OSError)
    assert str(port) in str(caught.value)
    assert not env.running
    assert set(threading.enumerate()) <= threads


def test_episode_urls_reach_the_domain_over_rest_openapi_and_mcp(
    env: chaosproxy.Environment,
) -> None:
    with env.episode() as episode:
        assert episode.url("travel") == f"{env.url}/e/{episode.id}/travel"
        assert episode.url() == episode.url("travel")  # the only domain
        spec = httpx.get(episode.openapi_url("travel"), timeout=10).json()
        assert "/tools/get_itinerary" in spec["paths"]
        assert _read(episode.url("travel"), 2) == [200, 200]

        async def over_mcp() -> list[str]:
            async with fastmcp.Client(episode.mcp_url("travel"), timeout=10) as client:
                await client.call_tool("get_itinerary", {})
                return [tool.name for tool in await client.list_tools()]

        import asyncio

        assert "get_itinerary" in asyncio.run(over_mcp())
        calls = episode.calls()
        tool_calls = [c for c in calls if c.kind == "tool_call"]
        assert [(c.tool, c.transport, c.step) for c in tool_calls] == [
            ("get_itinerary", "rest", 1),
            ("get_itinerary", "rest", 2),
            ("get_itinerary", "mcp", 3),
        ]
        assert {c.episode for c in calls} == {episode.id}
        assert episode.faults() == []  # lambda0.0
        with pytest.raises(chaosproxy.UnknownDomainError, match="support"):
            episode.url("support")


def test_verdict_runs_the_task_verifier_on_the_current_state(env: chaosproxy.Environment) -> None:
    task = get_domain("travel").tasks[TASK]
    episode = env.episode(task=TASK)
    assert episode.task == TASK and episode.task_text == task.description
    before = episode.verdict()
    assert not before and before.success is False and before.t_success is None

    async def solve() -> None:
        async with RestToolClient(episode.url()) as client:
            await task.solve(client)

    import asyncio

    asyncio.run(solve())
    after = episode.verdict()
    assert after and after.task == TASK
    steps = [c.step for c in episode.calls() if c.step is not None]
    assert after.t_success in steps
    episode.end()


def test_verdict_needs_a_task_and_tasks_must_exist(env: chaosproxy.Environment) -> None:
    with env.episode() as episode, pytest.raises(chaosproxy.NoTaskError):
        episode.verdict()
    with pytest.raises(chaosproxy.UnknownTaskError, match="travel-99"):
        env.episode(task="travel-99-nothing")
    with pytest.raises(chaosproxy.UnknownDomainError, match="scheduling"):
        env.episode(task=next(iter(get_domain("scheduling").tasks)))


def test_end_forgets_the_episode_everywhere(env: chaosproxy.Environment) -> None:
    episode = env.episode(task=TASK)
    assert _read(episode.url(), 1) == [200]
    oracle = f"{env._running().service_urls['travel']}/_oracle/episodes/{episode.id}/state"
    oracle_auth = env._running().oracle_headers  # the services' oracles need their token
    assert httpx.get(oracle).status_code == 401
    assert httpx.get(oracle, headers=oracle_auth).status_code == 200
    control = f"{env.control_url}/_chaos/episodes/{episode.id}"
    auth = {"Authorization": f"Bearer {env.token}"}
    before = httpx.get(control, headers=auth).json()
    assert before["steps"] == 1 and before["engine"]["known"] is True
    episode.end()
    episode.end()  # idempotent
    assert httpx.get(oracle, headers=oracle_auth).status_code == 404
    after = httpx.get(control, headers=auth).json()
    assert after["steps"] == 0 and after["engine"]["known"] is False
    assert len(episode.calls()) == 1  # what happened stays readable
    with pytest.raises(chaosproxy.NotRunningError):
        episode.url()
    again = env.episode(id=episode.id)  # the id is free again, and starts afresh
    assert again.calls() == []
    again.end()


def test_same_key_same_faults_different_key_other_faults(env: chaosproxy.Environment) -> None:
    def faults(key: str) -> list[tuple[str, int | None]]:
        with env.episode(key=key, profile="lambda0.3") as episode:
            _read(episode.url("travel"), 12)
            assert episode.profile == "lambda0.3"
            delivered = [c for c in episode.calls() if c.fault_delivered]
            assert len(delivered) == len(episode.faults())
            return [(f.name, f.step) for f in episode.faults()]

    first, second = faults("same"), faults("same")
    assert first == second and first  # 12 calls at λ0.3: this key meets faults
    assert any(faults(f"other-{i}") != first for i in range(3))


async def test_async_context_manager_on_the_running_loop() -> None:
    async with chaosproxy.Environment(domains=["travel"], profile="lambda0.0") as env:
        assert env.running
        episode = env.episode(task=TASK)
        async with httpx.AsyncClient() as client:
            reply = await client.post(f"{episode.url()}/tools/get_itinerary", json={})
        assert reply.status_code == 200
        assert [c.tool for c in episode.calls()] == ["get_itinerary"]
        assert not episode.verdict()
        episode.end()
    assert not env.running
    with pytest.raises(chaosproxy.NotRunningError):
        env.episode()


def test_an_interrupt_inside_the_with_stops_services_and_thread() -> None:
    before = set(threading.enumerate())
    pids = []
    with (
        pytest.raises(KeyboardInterrupt),
        chaosproxy.Environment(domains=["travel"], profile="lambda0.0") as env,
    ):
        services = env._running()._services._process
        assert services is not None
        pids.append(services.pid)
        raise KeyboardInterrupt
    assert not env.running
    with pytest.raises(ProcessLookupError):
        os.kill(pids[0], 0)
    assert set(threading.enumerate()) <= before


def test_without_run_dir_a_temporary_one_is_removed_on_close(tmp_path: object) -> None:
    with chaosproxy.Environment(upstreams={"crm": "http://127.0.0.1:9"}) as env:
        run_dir = env.run_dir
        assert run_dir.is_dir()
    assert not run_dir.exists()


@pytest.fixture
def crm() -> Iterator[str]:
    with echo_service() as url:
        yield url


def test_an_upstream_of_your_own_behind_the_proxy(crm: str) -> None:
    with chaosproxy.Environment(upstreams={"crm": crm}, profile="lambda0.0") as env:
        assert (env.domains, env.services) == ([], ["crm"])
        with env.episode(key="k") as episode:
            url = f"{episode.url()}/tools/search_contacts"
            reply = httpx.post(url, json={"q": "ana"}, timeout=10)
            assert reply.json() == {"path": "/tools/search_contacts", "got": {"q": "ana"}}
            [call] = episode.calls()
            assert (call.domain, call.tool, call.episode_key, call.step, call.status) == (
                "crm",
                "search_contacts",
                "k",
                1,
                200,
            )
            with pytest.raises(chaosproxy.UnknownDomainError, match="built-in"):
                episode.journal("crm")
