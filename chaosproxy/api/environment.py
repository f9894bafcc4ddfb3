"""The public Environment: domain services, fault engine and proxy on free 127.0.0.1 ports.

The one way to start an environment: `chaosproxy up`, the runner and the pytest plugin
all construct this class. It validates its settings up front, raises only `ChaosError`s,
runs as a sync or an async context manager, and hands out `Episode`s; the private
`chaosproxy.proxy.environment` does the starting behind it.

    with chaosproxy.Environment(domains=["travel"], profile="lambda0.2", seed=7) as env:
        episode = env.episode(task="travel-01-book-cheapest")
        my_agent(episode.url("travel"))
        assert episode.verdict()

Sync use runs the environment's event loop on a daemon thread, so the caller's thread (and
any event loop of its own, such as pytest-asyncio's) stays free; async use runs it on the
caller's loop. Either way the environment ends what it started: on leaving the `with`,
on an exception or KeyboardInterrupt inside it, and at interpreter exit if never closed.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import errno
import secrets
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal, TypeVar
from urllib.parse import quote

import httpx

from chaosproxy.api.calls import CallIndex
from chaosproxy.api.episode import EndpointSet, Episode
from chaosproxy.api.errors import (
    NotRunningError,
    OracleError,
    PortInUseError,
    SetupError,
    StartError,
    UnknownDomainError,
)
from chaosproxy.api.judge import UpJudge
from chaosproxy.api.loop import LoopThread
from chaosproxy.api.options import ControlSettings, ForwardSettings
from chaosproxy.api.settings import check_settings, load_profile
from chaosproxy.api.verdict import find_task
from chaosproxy.defaults import DEFAULT_SEED
from chaosproxy.errors import ServicesError, ServicesOptionError
from chaosproxy.faults.schedule import Schedule, ScheduleError, parse_schedule
from chaosproxy.pacing import ModelPacer
from chaosproxy.proxy.apimap import OpenApiError
from chaosproxy.proxy.controlfile import ControlAccess, write_control_file
from chaosproxy.proxy.environment import Stack
from chaosproxy.proxy.routing import valid_name
from chaosproxy.records import CALLS_FILE, CallRecord
from chaosproxy.replay.files import load_schedule
from chaosproxy.tracing import NOOP, Tracer
from chaosproxy.tracing.setup import start_tracing

if TYPE_CHECKING:
    from chaosproxy.faults.profile import Profile
    from chaosproxy.forward.server import ForwardProxy

T = TypeVar("T")
STOP_TIMEOUT_S = 30.0
_open: weakref.WeakSet[Environment] = weakref.WeakSet()


class Environment:
    """Domain services and/or your own upstreams behind the fault proxy, started together.

    `domains`: built-in domain names (default: all of them, or none when `upstreams`,
    `services` or `forward` are given); `upstreams`: `{name: base URL}` of your own
    REST/MCP services (or a model endpoint), served under `/{name}/` with the same faults
    and log; `profile`: the default fault profile (a shipped name or a YAML path);
    `seed`: the run seed of every fault draw; `run_dir`: where calls.jsonl goes (default:
    a temporary directory removed on close); `port`/`host`: where the proxy listens
    (0: any free port).

    Operator settings, all optional: `services`: `{domain: URL}` of built-in domains
    already served elsewhere (`chaosproxy serve`, docker compose), proxied instead of
    started (their oracle token comes from CHAOSPROXY_ORACLE_TOKEN); `openapi`:
    `{upstream: file or URL}` of an upstream's OpenAPI 3.x document, JSON or YAML (tool
    names come from its operationIds; one that cannot be used is a StartError naming why;
    default: its /openapi.json, if it is one); `upstream_ca`: a PEM file of
    extra CAs trusted for https upstreams; `idle_episodes`/`episode_idle_ttl`: the most idle
    episodes the proxy and its engine keep, and the seconds after which an idle one is
    forgotten (0: never; a forgotten one that comes back starts afresh);
    `default_episode_calls`: calls without an episode id form rolling episodes of this many
    tool calls, each with fresh fault draws (None: 6; 0: one endless episode; see
    `chaosproxy.proxy.episodes.DEFAULT_EPISODE_CALLS`); `control`: the
    control API's listener and token (`ControlSettings`); `forward`: a forward proxy beside
    the reverse one (`ForwardSettings`); `otlp_endpoint`/`otlp_content`: OpenTelemetry spans
    of every call, to this OTLP/HTTP receiver (default: the `OTEL_EXPORTER_OTLP_*`
    variables, else off), with tool arguments `none`, on `faults` (default) or on `all`
    calls (docs/observability.md); `episode_credentials`: an episode is reached only
    through an unguessable credential in its URLs (`/e/{credential}/...`, what
    `Episode.url()` and `endpoints(episode)` give), issued when it is configured and revoked
    when it ends, so an agent cannot act in another episode (docs/security.md);
    `model_pacer`: paces the model calls the proxy forwards upstream under a provider's
    limits (`chaosproxy.pacing.RatePacer(rpm, tpm)`, or any `ModelPacer`, e.g. one shared
    by a cluster); `provider_retries`: re-sends of a model call the real provider answered
    429/5xx (None: 3; 0: none; docs/scale.md).
    """

    def __init__(
        self,
        *,
        domains: Sequence[str] | None = None,
        upstreams: Mapping[str, str] | None = None,
        profile: str | Path | Profile = "lambda0.2",
        seed: int = DEFAULT_SEED,
        run_dir: str | Path | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        services: Mapping[str, str] | None = None,
        openapi: Mapping[str, str | Path] | None = None,
        upstream_ca: str | Path | None = None,
        idle_episodes: int = 256,
        episode_idle_ttl: float = 0.0,
        default_episode_calls: int | None = None,
        control: ControlSettings | None = None,
        forward: ForwardSettings | None = None,
        episode_credentials: bool = False,
        otlp_endpoint: str | None = None,
        otlp_content: str | None = None,
        model_pacer: ModelPacer | None = None,
        provider_retries: int | None = None,
    ) -> None:
        self.settings = check_settings(
            domains=domains,
            upstreams=upstreams,
            profile=profile,
            seed=seed,
            run_dir=run_dir,
            port=port,
            host=host,
            services=services,
            openapi=openapi,
            upstream_ca=upstream_ca,
            idle_episodes=idle_episodes,
            episode_idle_ttl=episode_idle_ttl,
            default_episode_calls=default_episode_calls,
            control=control,
            forward=forward,
            episode_credentials=episode_credentials,
            otlp_endpoint=otlp_endpoint,
            otlp_content=otlp_content,
            provider_retries=provider_retries,
        )
        """What this environment was given, checked once (chaosproxy/api/settings.py)."""
        self._profiles: dict[str, Profile] = {str(profile): self.profile}
        self.model_pacer = model_pacer
        """Paces the model calls the proxy forwards (chaosproxy.pacing); None: unpaced."""
        self.tracer: Tracer = NOOP
        """The OpenTelemetry tracer once started (`NOOP` when tracing is off)."""
        self._inner: Stack | None = None
        self._forward: ForwardProxy | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._loop: LoopThread | None = None
        self._mode: Literal["sync", "async"] | None = None
        self._run_dir: Path | None = None
        self._index: CallIndex | None = None
        self._http: httpx.Client | None = None
        self._live: set[str] = set()
        self._lock = threading.Lock()

    # ---- settings (read-only; checked once) ------------------------------------------

    @property
    def profile(self) -> Profile:
        """The default fault profile."""
        return self.settings.profile

    @property
    def seed(self) -> int:
        return self.settings.seed

    @property
    def domains(self) -> list[str]:
        """The built-in domains started here."""
        return self.settings.domains

    @property
    def upstreams(self) -> dict[str, str]:
        """Your upstreams and the forward proxy's allowed hosts, by name."""
        return self.settings.upstreams

    @property
    def external(self) -> dict[str, str]:
        """Built-in domains served elsewhere (`services`)."""
        return self.settings.services

    @property
    def openapi(self) -> dict[str, str]:
        return self.settings.openapi

    @property
    def control(self) -> ControlSettings:
        return self.settings.control

    @property
    def episode_credentials(self) -> bool:
        return self.settings.episode_credentials

    @property
    def default_episode_calls(self) -> int:
        return self.settings.limits.default_episode_calls

    # ---- state --------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._inner is not None

    def _running(self) -> Stack:
        if self._inner is None:
            raise NotRunningError("the environment is not running; use `with Environment(...)`")
        return self._inner

    @property
    def url(self) -> str:
        """The proxy's base URL."""
        return self._running().proxy_url

    @property
    def control_url(self) -> str:
        """The control API's own listener; it needs `Authorization: Bearer {token}`."""
        return self._running().control_url

    @property
    def token(self) -> str:
        """The control API's bearer token. Keep it from the agent under test."""
        return self._running().token

    @property
    def run_dir(self) -> Path:
        """Where this environment's calls.jsonl is written."""
        self._running()
        assert self._run_dir is not None
        return self._run_dir

    @property
    def services(self) -> list[str]:
        """Every name an episode can reach: built-in domains and upstreams."""
        return sorted([*self.domains, *self.external, *self.upstreams])

    @property
    def log_path(self) -> Path:
        """The call log (RUN_DIR/calls.jsonl), one record per proxied request."""
        return self.run_dir / CALLS_FILE

    @property
    def oracle_urls(self) -> dict[str, str]:
        """Each built-in domain's service, direct (not through the proxy), for oracle calls
        with `oracle_headers`. Operator-only, like the control API: never give these to the
        agent under test."""
        inner = self._running()
        return {name: inner.service_urls[name] for name in self.builtin_domains()}

    @property
    def oracle_headers(self) -> dict[str, str]:
        """What oracle calls to `oracle_urls` send (the services' bearer token)."""
        return dict(self._running().oracle_headers)

    @property
    def forward_url(self) -> str | None:
        """The forward proxy's URL (HTTP_PROXY/HTTPS_PROXY), when `forward` was given."""
        self._running()
        return self._forward.url if self._forward is not None else None

    @property
    def forward_allow(self) -> list[str]:
        """The origins the forward proxy lets through (yours, then the profile's `allow:`)."""
        return self.settings.forward.allowlist.origins()

    def forward_settings(self) -> list[str]:
        """What an agent sets to use the forward proxy, as shell lines (none without it)."""
        self._running()
        return self._forward.client_settings() if self._forward is not None else []

    def endpoints(self, episode: str | None = None) -> dict[str, EndpointSet]:
        """Per service name: its REST base, OpenAPI and MCP URLs through the proxy; inside
        `episode` when given (prefer `Environment.episode()`, which also configures it)."""
        inner = self._running()
        ends = inner.endpoints(quote(episode, safe="") if episode is not None else None)
        return ends

    def api_documents(self) -> dict[str, str]:
        """Your upstreams whose OpenAPI document was read at start (the others are named by
        `routes:` or their paths): the file or URL given in `openapi`, or the document the
        service serves at `/openapi.json`, through the proxy."""
        inner = self._running()
        described = inner.proxy.apis if inner.proxy is not None else {}
        return {
            name: self.openapi.get(name) or f"{inner.proxy_url}/{name}/openapi.json"
            for name in sorted(described)
        }

    def __repr__(self) -> str:
        state = self._inner.proxy_url if self._inner is not None else "stopped"
        return f"<chaosproxy.Environment {state} profile={self.profile.name!r} seed={self.seed}>"

    # ---- lifecycle ------------------------------------------------------------------

    def _build(self) -> Stack:
        if self._mode is not None:
            raise NotRunningError("this Environment was already started; create a new one")
        given = self.settings.run_dir
        if given is not None:
            given.mkdir(parents=True, exist_ok=True)
            self._run_dir = given
        else:
            self._run_dir = Path(tempfile.mkdtemp(prefix="chaosproxy-"))
        self._index = CallIndex(self._run_dir)
        self._http = httpx.Client(timeout=30.0)
        return Stack(self.settings, run_dir=self._run_dir)

    async def _start(self, inner: Stack) -> None:
        """Services, proxy, then the forward proxy; whatever started is stopped on failure."""
        stack = contextlib.AsyncExitStack()
        try:
            try:
                await inner.start()
                if inner.proxy is not None:  # the one place a pacer reaches the proxy
                    inner.proxy.core.pacer = self.model_pacer
                self.tracer = start_tracing(self.settings.tracing, inner, stack)
                stack.push_async_callback(inner.stop)
                assert self._run_dir is not None
                self._forward = await stack.enter_async_context(
                    self.settings.forward.serve(inner.proxy_url, self._run_dir, self.settings.host)
                )
            except OSError as bad:
                if bad.errno in (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL):
                    raise PortInUseError(f"{bad}; pass port=0 for any free port") from bad
                raise StartError(f"the environment did not start: {bad}") from bad
            except (ServicesError, ServicesOptionError, OpenApiError) as bad:
                raise StartError(str(bad)) from bad
            self._attach_judge(inner)
            if self.control.write_file:
                assert self._run_dir is not None
                access = ControlAccess(url=inner.control_url, token=inner.token)
                write_control_file(self._run_dir, access)
        except BaseException:
            self._forward = None
            await stack.aclose()
            raise
        self._stack = stack

    def _attach_judge(self, inner: Stack) -> None:
        """The control API judges episodes that name a built-in task (`up`'s verdicts)."""
        builtin = {name: inner.service_urls[name] for name in self.builtin_domains()}
        control = inner.proxy.control_api if inner.proxy is not None else None
        if control is None or self._run_dir is None or not builtin:
            return
        control.judge = UpJudge(self._run_dir, builtin, dict(inner.oracle_headers), self.seed)

    async def _stop(self, inner: Stack) -> None:
        stack, self._stack, self._forward = self._stack, None, None
        if stack is not None:
            await stack.aclose()
        else:
            await inner.stop()

    def start(self) -> Environment:
        """Start on a background event-loop thread (what `with Environment(...)` does)."""
        inner = self._build()
        self._mode = "sync"
        self._loop = LoopThread()
        try:
            self._loop.run(self._start(inner))
        except BaseException:
            self._cleanup()
            raise
        self._inner = inner
        _open.add(self)
        return self

    def close(self) -> None:
        """Stop the proxy and the services; idempotent."""
        inner, self._inner = self._inner, None
        try:
            if inner is not None and self._loop is not None and self._loop.alive:
                self._loop.run(self._stop(inner), timeout=STOP_TIMEOUT_S)
        finally:
            self._cleanup()

    async def astart(self) -> Environment:
        """Start on the running event loop (what `async with Environment(...)` does)."""
        inner = self._build()
        self._mode = "async"
        try:
            await self._start(inner)
        except BaseException:
            self._cleanup()
            raise
        self._inner = inner
        return self

    async def aclose(self) -> None:
        inner, self._inner = self._inner, None
        try:
            if inner is not None:
                await self._stop(inner)
        finally:
            self._cleanup()

    def _cleanup(self) -> None:
        _open.discard(self)
        if self._loop is not None:
            self._loop.close()
            self._loop = None
        if self._http is not None:
            self._http.close()
            self._http = None
        if self.settings.run_dir is None and self._run_dir is not None:
            shutil.rmtree(self._run_dir, ignore_errors=True)
        self._live.clear()

    def __enter__(self) -> Environment:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Environment:
        return await self.astart()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # ---- episodes -------------------------------------------------------------------

    def episode(
        self,
        task: str | None = None,
        key: str | None = None,
        *,
        profile: str | Path | Profile | None = None,
        id: str | None = None,
        seed: int | None = None,
        plan_length: int | None = None,
        attempt: str | None = None,
        schedule: Schedule | Mapping[str, object] | str | Path | None = None,
        schedule_mode: Literal["replace", "overlay"] = "replace",
    ) -> Episode:
        """A fresh episode, isolated from every other one.

        `task`: a built-in task id; its domain is reset to the task's initial state and
        `verdict()` runs its verifier. `key`: the name fault draws hash (same seed and key,
        same faults at the same calls); default: the episode id, which is random unless
        `id` is given. `profile`: this episode's profile (default: the environment's);
        `seed`: its seed (default: the environment's). `plan_length`: the task's minimal
        number of tool calls, so an incident profile (fit-v2) times its incident within
        them (default: the built-in task's l_min; none: the profile's fixed steps).
        `attempt`: stamped on every call the episode makes (CallRecord.attempt), so a
        runner can tell a re-run's calls from an interrupted attempt's. `schedule`: an
        explicit plan of faults (a `Schedule`, its JSON as a dict, or a JSON/YAML file),
        in place of the profile's draws (`schedule_mode` "replace") or on top of them
        ("overlay"); docs/schedules.md.
        """
        inner = self._running()
        episode_id = id if id is not None else f"ep-{secrets.token_hex(6)}"
        if not valid_name(episode_id) or len(episode_id) > 200:
            raise SetupError(f"episode id {episode_id!r}: use 1-200 letters, digits and _.-~ only")
        chosen = self._profile(profile) if profile is not None else self.profile
        plan: Schedule | None = None
        try:
            if isinstance(schedule, Schedule):
                plan = schedule
            elif isinstance(schedule, (str, Path)):
                plan = load_schedule(Path(schedule))
            elif schedule is not None:
                plan = parse_schedule(dict(schedule))
        except (ScheduleError, OSError) as bad:
            raise SetupError(str(bad)) from None
        if schedule_mode not in ("replace", "overlay"):
            raise SetupError(f"schedule_mode {schedule_mode!r}: use 'replace' or 'overlay'")
        found = find_task(task) if task is not None else None
        if found is not None and found.domain not in self.builtin_domains():
            raise UnknownDomainError(
                f"task {task!r} belongs to domain {found.domain!r}, which this environment "
                f"does not serve (it serves {', '.join(self.services)})"
            )
        with self._lock:
            if episode_id in self._live:
                raise SetupError(f"episode {episode_id!r} is already running; end it first")
            self._live.add(episode_id)
        draw_key = key if key is not None else episode_id
        self._on_loop(
            lambda: inner.configure_episode(
                episode_id,
                profile=chosen,
                seed=self.seed if seed is None else seed,
                key=draw_key,
                plan_length=plan_length
                if plan_length is not None or found is None
                else found.l_min,
                attempt=attempt,
                schedule=plan,
                schedule_mode=schedule_mode,
            )
        )
        assert self._index is not None
        self._index.watch(episode_id)
        if found is not None:
            self.oracle(
                found.domain,
                "POST",
                f"/episodes/{quote(episode_id, safe='')}/reset",
                {"task_id": found.id},
            )
        return Episode(self, episode_id, draw_key, chosen.name, found)

    def _profile(self, name: str | Path | Profile) -> Profile:
        if not isinstance(name, (str, Path)):
            return name
        key = str(name)
        if key not in self._profiles:
            self._profiles[key] = load_profile(name)
        return self._profiles[key]

    def _on_loop(self, function: Callable[[], T]) -> T:
        """Touch what the proxy's loop owns from that loop's thread."""
        if self._mode == "sync" and self._loop is not None:
            return self._loop.call(function)
        return function()

    # ---- what Episode asks for (its EpisodeHost protocol) -----------------------------

    def endpoints_for(self, episode: str) -> dict[str, EndpointSet]:
        return self._running().endpoints(quote(episode, safe=""))

    def builtin_domains(self) -> list[str]:
        """Domains with an oracle: the ones started here and the ones served elsewhere."""
        return self.settings.builtin_domains

    def service_errors_of(self, episode: str) -> int:
        inner = self._running()
        return self._on_loop(lambda: inner.service_errors(episode))

    def oracle(self, domain: str, method: str, path: str, body: object = None) -> object:
        """One call to a built-in domain's oracle (direct, never through the proxy)."""
        inner = self._running()
        assert self._http is not None
        url = f"{inner.service_urls[domain]}/_oracle{path}"
        try:
            response = self._http.request(method, url, json=body, headers=inner.oracle_headers)
        except httpx.HTTPError as failed:
            raise OracleError(f"{method} {url}: {failed!r}") from failed
        if response.status_code == 404 and method == "DELETE":
            return None  # no call of the episode reached this domain
        if response.status_code == 404:
            raise OracleError(
                f"{domain} holds no state for this episode yet: no call of it reached the "
                f"service ({response.text[:200]})"
            )
        if not response.is_success:
            raise OracleError(f"{method} {url}: HTTP {response.status_code}: {response.text[:300]}")
        return response.json()

    def calls_of(self, episode: str) -> list[CallRecord]:
        assert self._index is not None
        return self._index.records(episode)

    def end_episode(self, episode: str) -> list[CallRecord]:
        """Forget the episode in the engine and the proxy, and delete it in every service
        (the proxy's `delete_episode`, what the control API's DELETE /_chaos/episodes/{id}
        does)."""
        inner = self._inner
        calls = self._index.drop(episode) if self._index is not None else []
        with self._lock:
            self._live.discard(episode)
        if inner is None:
            return calls
        if self._mode == "sync" and self._loop is not None:
            statuses = self._loop.run(inner.delete_episode(episode), timeout=STOP_TIMEOUT_S)
            failed = {name: code for name, code in statuses.items() if code not in (200, 404)}
            if failed:
                raise OracleError(f"ending episode {episode!r}: oracle DELETE answered {failed}")
            return calls
        # on the caller's loop: the same steps, without waiting on that loop from inside it
        inner.forget_episode(episode)
        for domain in self.builtin_domains():
            self.oracle(domain, "DELETE", f"/episodes/{quote(episode, safe='')}")
        return calls

    async def aend_episode(self, episode: str) -> list[CallRecord]:
        """`end_episode` without blocking the caller's event loop (the runner's way)."""
        inner = self._inner
        calls = self._index.drop(episode) if self._index is not None else []
        with self._lock:
            self._live.discard(episode)
        if inner is None:
            return calls
        if self._mode == "sync" and self._loop is not None:
            future = asyncio.run_coroutine_threadsafe(
                inner.delete_episode(episode), self._loop.loop
            )
            statuses = await asyncio.wrap_future(future)
        else:
            statuses = await inner.delete_episode(episode)
        failed = {name: code for name, code in statuses.items() if code not in (200, 404)}
        if failed:
            raise OracleError(f"ending episode {episode!r}: oracle DELETE answered {failed}")
        return calls


@atexit.register
def _close_forgotten() -> None:
    """An environment never closed (a killed test session) still stops its services."""
    for env in list(_open):
        with contextlib.suppress(Exception):
            env.close()
