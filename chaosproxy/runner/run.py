"""`chaosproxy run`: drive agents over a task grid into a run directory.

The run directory is written as the run goes (config and tasks first, then one episode
record per finished episode), so Ctrl-C leaves a scoreable partial run and `--resume`
runs only the episodes that have no record yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import importlib.metadata
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from chaosproxy.agents.apedm.embedder import Embedder
from chaosproxy.agents.apedm.memory import (
    MANIFEST,
    EpisodicMemory,
    MemoryDirError,
    fingerprint,
)
from chaosproxy.agents.base import Agent, Endpoints, Transport
from chaosproxy.agents.llm import ModelEndpoint, UsageLedger
from chaosproxy.agents.registry import AgentSetup, make_agent
from chaosproxy.api import Environment, Episode, SetupError
from chaosproxy.compose.remote import RemoteEnvironment, RemoteError, RemoteSpec, copy_calls
from chaosproxy.compose.services import oracle_headers
from chaosproxy.errors import ChaosError
from chaosproxy.faults.schedule import Schedule, ScheduleMode
from chaosproxy.pacing import make_pacer
from chaosproxy.profiles import load_profile
from chaosproxy.records import (
    CALLS_FILE,
    CONFIG_FILE,
    EPISODES_FILE,
    GRID_FILE,
    TASKS_FILE,
    TEXTS_FILE,
    EpisodeRecord,
    GridEntry,
    RunConfig,
    RunDirError,
    TaskMeta,
    TaskText,
    append_jsonl,
    read_jsonl,
)
from chaosproxy.runner.command_agent import AgentIsolation, AgentUserError
from chaosproxy.runner.episode import (
    EpisodeEnvironment,
    EpisodeSettings,
    infrastructure_failure,
    new_attempt,
    run_episode,
)
from chaosproxy.runner.grid import EpisodeSpec, build_grid, select_shard, select_tasks
from chaosproxy.runner.gridfile import GridBlock
from chaosproxy.runner.models import AgentPlan, Price, plan_agents, probe_mock, with_usage
from chaosproxy.runner.paraphrase import Paraphraser
from chaosproxy.runner.perturb import Perturbed, perturb
from chaosproxy.runner.progress import Progress
from chaosproxy.tracing import TracingError, make_tracer
from chaosproxy.tracing.runner import traced_episode
from chaosproxy.tracing.setup import trace_settings


class RunError(ChaosError, ValueError):
    """A run that cannot start: bad grid, a run directory that does not fit, a bad profile."""


@dataclass(frozen=True)
class RunSpec:
    agents: list[str]
    suite: str
    profiles: list[str]
    epsilons: list[float]
    trials: int
    out: Path
    seed: int = 7
    concurrency: int = 16
    transport: Transport = "rest"
    timeout_s: float = 60.0
    domains: list[str] = field(default_factory=list)
    task_patterns: list[str] = field(default_factory=list)
    agent_command: str | None = None
    resume: bool = False
    paraphrase_model: str | None = None
    paraphrase_base_url: str | None = None
    model: str | None = None
    base_url: str | None = None
    models: list[str] = field(default_factory=list)
    """Models as a grid axis for model-driven agents; `model` alone is one model."""
    model_urls: dict[str, str] = field(default_factory=dict)
    """An endpoint per model (`--base-url NAME=URL`); others use `base_url`."""
    prices: dict[str, Price] = field(default_factory=dict)
    memory: Path | None = None
    """An ap-edm memory directory (`chaosproxy memory build`); read-only during the run."""
    embedding_model: str | None = None
    """A /v1/embeddings model for ap-edm; None: the offline lexical embedding."""
    remote: RemoteSpec | None = None
    """An environment that is already up (`--services`) instead of starting one."""
    blocks: list[GridBlock] = field(default_factory=list)
    """A grid file's blocks (`--grid`): the run is the union of their cross products, and
    agents, models, suite, ε, profiles and trials above are derived from them."""
    agent_isolation: AgentIsolation = field(default_factory=AgentIsolation)
    """What an `--agent-cmd` agent inherits and which user it runs as (docs/security.md)."""
    model_via_proxy: bool = False
    """Model calls go through the run's proxy (`/e/{episode}/llm/v1`), drawing model faults
    from the episode's profile and logged as `kind: "model_call"` in calls.jsonl."""
    shard: tuple[int, int] | None = None
    """(I, N): run only shard I of N of the grid (`grid.shard_of`); `merge` joins shards."""
    texts_file: Path | None = None
    """A texts.jsonl computed before (`--prepare`): read, never perturbed or paraphrased again."""
    prepare_only: bool = False
    """Write the run directory (config, tasks, grid, texts) and run no episode."""
    max_cost_usd: float | None = None
    """Start no new episode once the run's recorded episodes cost this much (needs --price)."""
    max_tokens: int | None = None
    """Start no new episode once the run's recorded episodes used this many model tokens."""
    otlp_endpoint: str | None = None
    otlp_content: str | None = None
    """OpenTelemetry spans of the episodes and their calls (docs/observability.md)."""
    rpm: int | None = None
    tpm: int | None = None
    """Model calls through the run's proxy paced to these per-minute limits (chaosproxy.pacing)."""
    provider_retries: int | None = None
    """Re-sends of a model call the provider answered 429/5xx (None: the proxy's default)."""
    schedule: Schedule | None = None
    """A fault schedule for every episode (`--schedule` / `--schedule-overlay`)."""
    schedule_mode: ScheduleMode = "replace"

    def embedder(self) -> Embedder:
        return Embedder(self.endpoint(self.embedding_model) if self.embedding_model else None)

    def all_models(self) -> list[str]:
        return list(self.models) or ([self.model] if self.model else [])

    def grid_blocks(self) -> list[GridBlock]:
        """The blocks of the run; flags alone make one block."""
        if self.blocks:
            return list(self.blocks)
        return [
            GridBlock(
                name="grid",
                agents=self.agents,
                models=self.all_models(),
                suite=self.suite,
                domains=self.domains,
                tasks=self.task_patterns,
                epsilons=self.epsilons,
                profiles=self.profiles,
                trials=self.trials,
            )
        ]

    def endpoint(self, model: str) -> ModelEndpoint:
        return ModelEndpoint(model, self.model_urls.get(model, self.base_url))

    def model_upstreams(self) -> tuple[dict[str, str], dict[str, str]]:
        """`--model-via-proxy`: proxy upstreams (`llm`, `llm-2`, … one per distinct endpoint,
        the URL without its `/v1`) and the upstream each model is reached through."""
        upstreams: dict[str, str] = {}
        routes: dict[str, str] = {}
        for model in self.all_models():
            url = self.endpoint(model).base_url or os.environ.get("OPENAI_BASE_URL")
            root = (url or "https://api.openai.com/v1").rstrip("/")
            if not root.endswith("/v1"):
                raise RunError(
                    f"--model-via-proxy: the endpoint of {model} ({root}) must end in /v1"
                )
            root = root.removesuffix("/v1")
            name = next((n for n, u in upstreams.items() if u == root), None)
            if name is None:
                name = "llm" if not upstreams else f"llm-{len(upstreams) + 1}"
                upstreams[name] = root
            routes[model] = name
        return upstreams, routes


@dataclass
class RunSummary:
    total: int
    recorded: int
    interrupted: bool
    elapsed_s: float
    episodes_s: float
    """Time spent running episodes, without starting and stopping the services."""
    budget: str | None = None
    """Why no new episode was started (--max-cost / --max-tokens reached), if so."""


@dataclass
class Budget:
    """The spend cap: what the recorded episodes cost, against --max-cost / --max-tokens.
    Episodes in flight when it is reached finish and are recorded; none starts after."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    cost_usd: float = 0.0
    tokens: int = 0

    def add(self, record: EpisodeRecord) -> None:
        self.cost_usd += record.cost_usd or 0.0
        self.tokens += record.usage.total_tokens if record.usage is not None else 0

    def reached(self) -> str | None:
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return f"--max-cost {self.max_cost_usd:g} reached (US${self.cost_usd:.4f} spent)"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"--max-tokens {self.max_tokens} reached ({self.tokens} tokens used)"
        return None


class _EnvironmentAdapter:
    """What episodes need, from the public `chaosproxy.Environment`: each running episode is
    an `Episode` handle, configured with a profile resolved once for the run."""

    def __init__(
        self,
        env: Environment,
        profiles: dict[str, Any],
        schedule: Schedule | None = None,
        schedule_mode: ScheduleMode = "replace",
    ) -> None:
        self._env = env
        self._schedule = schedule
        self._schedule_mode: ScheduleMode = schedule_mode
        self._profiles = profiles
        self._episodes: dict[str, Episode] = {}
        self.service_urls = env.oracle_urls
        self.tracer = env.tracer

    def oracle_headers(self) -> dict[str, str]:
        return self._env.oracle_headers

    def configure_episode(
        self,
        episode: str,
        *,
        profile: str,
        seed: int,
        key: str,
        plan_length: int,
        attempt: str | None = None,
    ) -> None:
        self._episodes[episode] = self._env.episode(
            id=episode,
            key=key,
            profile=self._profiles[profile],
            seed=seed,
            plan_length=plan_length,
            attempt=attempt,
            schedule=self._schedule,
            schedule_mode=self._schedule_mode,
        )

    def endpoints(self, episode: str) -> dict[str, Endpoints]:
        return {
            name: ends
            for name, ends in self._episodes[episode].endpoints().items()
            if name in self.service_urls
        }

    def model_url(self, episode: str, upstream: str) -> str:
        """An OpenAI base URL for one episode's model calls through the proxy (asked for
        when the agent is made, before the episode is configured)."""
        return f"{self._env.endpoints(episode)[upstream].rest}/v1"

    def service_errors(self, episode: str) -> int:
        return self._episodes[episode].service_errors()

    async def end_episode(self, episode: str, domain: str) -> None:
        handle = self._episodes.pop(episode, None)
        if handle is not None:
            await handle.aend()


@contextlib.asynccontextmanager
async def _environment(
    spec: RunSpec, domains: list[str], profiles: dict[str, Any]
) -> AsyncIterator[EpisodeEnvironment]:
    """The run's own services and proxy, or (`--services`) an environment already up."""
    if spec.remote is None:
        try:
            env = Environment(
                domains=domains,
                upstreams=spec.model_upstreams()[0] if spec.model_via_proxy else None,
                profile=profiles[spec.profiles[0]],
                seed=spec.seed,
                run_dir=spec.out,
                episode_credentials=True,
                otlp_endpoint=spec.otlp_endpoint,
                otlp_content=spec.otlp_content,
                model_pacer=make_pacer(spec.rpm, spec.tpm),
                provider_retries=spec.provider_retries,
            )
        except SetupError as bad:
            raise RunError(str(bad)) from bad
        async with env:
            yield _EnvironmentAdapter(env, profiles, spec.schedule, spec.schedule_mode)
        return
    if spec.schedule is not None:
        raise RunError("--schedule runs on the run's own environment, not with --services")
    started = time.time()
    try:
        tracer = make_tracer(trace_settings(spec.otlp_endpoint, spec.otlp_content))
    except (SetupError, TracingError) as bad:
        raise RunError(str(bad)) from bad
    try:
        async with RemoteEnvironment(spec.remote, profiles, domains, tracer=tracer) as remote:
            if spec.model_via_proxy:
                remote.check_model_upstreams(spec.model_upstreams()[0])
            yield remote
    except RemoteError as problem:
        raise RunError(str(problem)) from problem
    finally:  # the episode spans go out (the remote proxy exports its call spans itself)
        await asyncio.to_thread(tracer.shutdown)
    if spec.remote.proxy_log is not None:
        copy_calls(spec.remote.proxy_log, remote.episodes, spec.out, since=started)


@dataclass
class _Plan:
    tasks: list[Any]
    plans: list[AgentPlan]
    grid: list[EpisodeSpec]


def _plan(spec: RunSpec) -> _Plan:
    """Tasks, agent plans and episodes of every block; an episode in two blocks runs once."""
    blocks = spec.grid_blocks()
    tasks: dict[str, Any] = {}
    block_tasks = []
    for block in blocks:
        chosen = select_tasks(block.suite, block.domains, block.tasks)
        block_tasks.append(chosen)
        tasks.update((task.id, task) for task in chosen)
    every_agent = list(dict.fromkeys(a for block in blocks for a in block.agents))
    every_model = list(dict.fromkeys(m for block in blocks for m in block.models))
    if spec.agent_command:
        plans: list[AgentPlan] = []
    else:
        try:
            plans = plan_agents(every_agent, every_model)
        except ValueError as clash:
            raise RunError(str(clash)) from clash
    grid: dict[str, EpisodeSpec] = {}
    for block, chosen in zip(blocks, block_tasks, strict=True):
        labels = (
            [
                plan.label
                for plan in plans
                if plan.name in block.agents
                and (plan.model is None or not block.models or plan.model in block.models)
            ]
            if plans
            else list(block.agents)
        )
        for episode in build_grid(labels, chosen, block.epsilons, block.profiles, block.trials):
            grid.setdefault(episode.episode_id, episode)
    return _Plan(list(tasks.values()), plans, list(grid.values()))


async def execute(spec: RunSpec) -> RunSummary:
    if spec.blocks:
        blocks = spec.blocks
        spec = replace(
            spec,
            agents=list(dict.fromkeys(a for b in blocks for a in b.agents)),
            models=list(dict.fromkeys(m for b in blocks for m in b.models)),
            profiles=list(dict.fromkeys(p for b in blocks for p in b.profiles)),
            epsilons=sorted({e for b in blocks for e in b.epsilons}),
            trials=max(b.trials for b in blocks),
            suite=blocks[0].suite if len({b.suite for b in blocks}) == 1 else "grid",
        )
    if spec.model_via_proxy:
        spec.model_upstreams()  # a bad endpoint fails before the run directory is written
    try:
        spec.agent_isolation.check()
    except AgentUserError as bad:
        raise RunError(str(bad)) from bad
    planned = _plan(spec)
    tasks, plans, whole = planned.tasks, planned.plans, planned.grid
    grid = select_shard(whole, *spec.shard) if spec.shard else whole
    try:
        profiles = {name: load_profile(name) for name in spec.profiles}
    except (ValueError, OSError) as bad:
        raise RunError(str(bad)) from bad
    ledger = UsageLedger()
    try:
        memory = _load_memory(spec)
        agents = {plan.label: _make(plan, spec, ledger, memory) for plan in plans}
    except ValueError as unknown:
        raise RunError(str(unknown)) from unknown
    if spec.max_cost_usd is not None:
        unpriced = sorted({p.model for p in plans if p.model and p.model not in spec.prices})
        if unpriced:
            raise RunError(f"--max-cost needs a --price for {', '.join(unpriced)}")
    mock = await probe_mock({spec.endpoint(p.model) for p in plans if p.model})
    config = _run_config(spec, sorted({task.domain for task in tasks}), profiles, plans, mock)
    config.settings["grid"] = {"episodes": len(whole), "sha256": grid_hash(whole)}
    config.settings["shard"] = (
        {"index": spec.shard[0], "count": spec.shard[1], "episodes": len(grid)}
        if spec.shard
        else None
    )
    done = _prepare_run_dir(spec, config, tasks, whole)
    texts = await grid_texts(spec, tasks, whole)
    if spec.prepare_only:
        return RunSummary(len(grid), len(done & {e.episode_id for e in grid}), False, 0.0, 0.0)
    pending = [episode for episode in grid if episode.episode_id not in done]
    budget = Budget(spec.max_cost_usd, spec.max_tokens)
    if done:
        for record in read_jsonl(spec.out / EPISODES_FILE, EpisodeRecord):
            budget.add(record)
    settings = EpisodeSettings(
        spec.out,
        spec.seed,
        spec.transport,
        spec.timeout_s,
        spec.agent_command,
        spec.agent_isolation,
    )

    progress = Progress(grid, done, calls_log=spec.out / CALLS_FILE)
    started = time.monotonic()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGINT, stop.set)
        loop.add_signal_handler(signal.SIGTERM, stop.set)
    try:
        async with _environment(spec, config.domains, profiles) as adapter:
            limits = httpx.Limits(max_connections=spec.concurrency * 2)
            headers = oracle_headers(spec.remote.oracle_token) if spec.remote else {}
            async with httpx.AsyncClient(timeout=30.0, limits=limits, headers=headers) as http:
                episodes_started = time.monotonic()
                await _run_all(
                    pending,
                    texts,
                    _via_proxy(plans, spec, ledger, memory, agents, adapter)
                    if spec.model_via_proxy
                    else lambda episode: agents.get(episode.agent),
                    adapter,
                    settings,
                    http,
                    spec,
                    progress,
                    stop,
                    ledger,
                    {plan.label: plan.model for plan in plans if plan.model},
                    budget,
                )
                episodes_s = time.monotonic() - episodes_started
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, ValueError):
                loop.remove_signal_handler(sig)
        progress.close()
    return RunSummary(
        len(grid),
        progress.done,
        stop.is_set(),
        time.monotonic() - started,
        episodes_s,
        budget.reached(),
    )


async def _run_all(
    pending: Sequence[EpisodeSpec],
    texts: dict[tuple[str, float], Perturbed],
    agent_for: Callable[[EpisodeSpec], Agent | None],
    env: EpisodeEnvironment,
    settings: EpisodeSettings,
    http: httpx.AsyncClient,
    spec: RunSpec,
    progress: Progress,
    stop: asyncio.Event,
    ledger: UsageLedger,
    models: dict[str, str],
    budget: Budget | None = None,
) -> None:
    """Run episodes with `spec.concurrency` workers, appending each finished record (the
    only writer of episodes.jsonl). `stop` (the operator) ends it at once and drops the
    attempts in flight; a reached `budget` only stops new episodes from starting."""
    budget = budget or Budget()
    queue: asyncio.Queue[EpisodeSpec] = asyncio.Queue()
    for episode in pending:
        queue.put_nowait(episode)

    async def worker() -> None:
        while not stop.is_set() and budget.reached() is None:
            try:
                episode = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            text = texts[(episode.task_id, episode.epsilon)]
            progress.start(episode)
            attempt = new_attempt()
            try:
                running = run_episode(
                    episode, text, agent_for(episode), env, settings, http, attempt
                )
                record = await traced_episode(env, episode, running)
            except Exception as failure:
                record = infrastructure_failure(episode, text, settings, failure, attempt)
            if stop.is_set():
                # The operator stopped the run while this attempt ran: whatever it ended
                # with (often a failure from the shutdown itself) is no finished episode;
                # it stays unrecorded, so --resume runs it again.
                return
            model = models.get(episode.agent)
            if model is not None:
                usage = ledger.pop(episode.episode_id)
                record = with_usage(record, model, usage, spec.prices.get(model))
            append_jsonl(spec.out / EPISODES_FILE, record)
            budget.add(record)
            progress.add(record)

    workers = [asyncio.create_task(worker()) for _ in range(max(1, spec.concurrency))]
    stopper: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    running: asyncio.Future[Any] = asyncio.gather(*workers)
    await asyncio.wait([running, stopper], return_when=asyncio.FIRST_COMPLETED)
    stopper.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await stopper
    if stop.is_set():
        for job in workers:
            job.cancel()
        # Every worker, not just the first to stop (`running` ends with the first
        # cancellation): the environment must outlive them all, or an attempt still in its
        # clean-up meets a closed proxy ("Upstream.start() was not awaited").
        await asyncio.gather(*workers, return_exceptions=True)
        with contextlib.suppress(asyncio.CancelledError):
            await running
        return
    await running


async def grid_texts(
    spec: RunSpec, tasks: Sequence[Any], grid: Sequence[EpisodeSpec]
) -> dict[tuple[str, float], Perturbed]:
    """The text of every (task, ε) cell of the whole grid, computed once per grid: read from
    the run directory's texts.jsonl (a resume) or from `--texts`, else computed and stored
    there, so shards and resumes never perturb or paraphrase again."""
    cells = {(episode.task_id, episode.epsilon) for episode in grid}
    stored = spec.out / TEXTS_FILE
    source = stored if stored.is_file() else spec.texts_file
    if source is not None:
        try:
            known = {
                (row.task_id, row.epsilon): Perturbed(row.text, tuple(row.relations))
                for row in read_jsonl(source, TaskText)
            }
        except (OSError, RunDirError) as bad:
            raise RunError(f"task texts: {bad}") from bad
        missing = sorted(cells - set(known))
        if missing:
            task_id, epsilon = missing[0]
            raise RunError(
                f"{source} has no text for {len(missing)} (task, ε) cell(s) of this grid, "
                f"e.g. {task_id} at ε={epsilon:g}; it was computed for another grid"
            )
        texts = {cell: known[cell] for cell in cells}
    else:
        texts = await task_texts(spec, tasks, cells)
    if not stored.is_file():
        rows = [
            TaskText(
                task_id=t,
                epsilon=e,
                text=texts[(t, e)].text,
                relations=list(texts[(t, e)].relations),
            )
            for t, e in sorted(texts)
        ]
        stored.write_text("".join(row.model_dump_json() + "\n" for row in rows))
    return texts


def grid_hash(grid: Sequence[EpisodeSpec]) -> str:
    """The grid's identity: a hash of its sorted episode ids."""
    ids = "\n".join(sorted(episode.episode_id for episode in grid))
    return hashlib.sha256(ids.encode()).hexdigest()


def source_hash() -> str:
    """A hash of the code that decides what an episode does (the chaosproxy package, its
    domains, agents and profiles): shards run by different code do not merge."""
    import chaosproxy
    import chaosproxy.agents
    import chaosproxy.domains
    import chaosproxy.profiles

    digest = hashlib.sha256()
    for package in (chaosproxy, chaosproxy.agents, chaosproxy.domains, chaosproxy.profiles):
        for root in sorted(Path(p) for p in package.__path__):
            for path in sorted(root.rglob("*")):
                if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                    continue
                if {"__pycache__", "node_modules"} & set(path.parts):
                    continue
                digest.update(f"{package.__name__}/{path.relative_to(root)}\0".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


SOURCE_SUFFIXES = {".py", ".yaml", ".yml", ".json"}


PARAPHRASE_FROM_EPSILON = 0.2
"""ReliabilityBench §4: paraphrasing joins the relations at the medium level."""


async def task_texts(
    spec: RunSpec, tasks: Sequence[Any], cells: set[tuple[str, float]]
) -> dict[tuple[str, float], Perturbed]:
    """The text of every (task, ε) cell, computed once so every trial reads the same words."""
    by_id = {task.id: task for task in tasks}
    texts = {
        (task_id, epsilon): perturb(
            by_id[task_id].description,
            epsilon=epsilon,
            seed=spec.seed,
            task_id=task_id,
            reference_date=_reference_date(by_id[task_id]),
        )
        for task_id, epsilon in cells
    }
    if spec.paraphrase_model is None:
        return texts
    paraphraser = Paraphraser(spec.paraphrase_model, spec.paraphrase_base_url)
    try:
        for (task_id, epsilon), text in sorted(texts.items()):
            if epsilon < PARAPHRASE_FROM_EPSILON - 1e-9:
                continue
            seed = draw_seed(spec.seed, task_id, epsilon)
            result = await paraphraser.paraphrase(text.text, seed)
            relation = "paraphrase" if result.accepted else "paraphrase_rejected"
            texts[(task_id, epsilon)] = Perturbed(result.text, (*text.relations, relation))
            if not result.accepted:
                print(f"{task_id} at ε={epsilon:g}: {result.reason}", file=sys.stderr)
    finally:
        await paraphraser.close()
    return texts


def draw_seed(seed: int, task_id: str, epsilon: float) -> int:
    digest = hashlib.blake2b(f"{seed}|{task_id}|{epsilon:.3f}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") >> 1


def _reference_date(task: Any) -> dt.date | None:
    today = getattr(task.initial_state(), "today", None)
    if isinstance(today, dt.date):
        return today
    if isinstance(today, str):
        with contextlib.suppress(ValueError):
            return dt.date.fromisoformat(today[:10])
    return None


def _load_memory(spec: RunSpec) -> EpisodicMemory | None:
    """The memory, checked against the embedding the run will query it with."""
    if spec.memory is None:
        return None
    memory = EpisodicMemory.load(spec.memory)
    wanted = spec.embedder().name
    if memory.manifest.embedding != wanted:
        raise MemoryDirError(
            f"{spec.memory} was built with the {memory.manifest.embedding} embedding, this run "
            f"would query it with {wanted}; use the same --embedding-model as `memory build`"
        )
    return memory


def _make(
    plan: AgentPlan,
    spec: RunSpec,
    ledger: UsageLedger,
    memory: EpisodicMemory | None,
    endpoint: ModelEndpoint | None = None,
) -> Agent:
    endpoint = endpoint or (spec.endpoint(plan.model) if plan.model else None)
    setup = AgentSetup(
        endpoint=endpoint,
        ledger=ledger,
        label=plan.label,
        memory=memory,
        embedder=spec.embedder(),
    )
    return make_agent(plan.name, setup)


def _via_proxy(
    plans: Sequence[AgentPlan],
    spec: RunSpec,
    ledger: UsageLedger,
    memory: EpisodicMemory | None,
    agents: dict[str, Agent],
    env: EpisodeEnvironment,
) -> Callable[[EpisodeSpec], Agent | None]:
    """Agents whose model is reached through the proxy, under the episode's id: a fresh
    agent per episode (agents keep no state between episodes), scripted ones as they are."""
    by_label = {plan.label: plan for plan in plans}
    routes = spec.model_upstreams()[1]

    def agent_for(episode: EpisodeSpec) -> Agent | None:
        plan = by_label.get(episode.agent)
        if plan is None or plan.model is None:
            return agents.get(episode.agent)
        url = env.model_url(episode.episode_id, routes[plan.model])
        return _make(plan, spec, ledger, memory, replace(spec.endpoint(plan.model), base_url=url))

    return agent_for


def _run_config(
    spec: RunSpec,
    domains: list[str],
    profiles: dict[str, Any],
    plans: Sequence[AgentPlan] = (),
    mock: dict[str, bool] | None = None,
) -> RunConfig:
    versions = {}
    for package in ("chaosproxy", "fastmcp", "mcp", "aiohttp", "pydantic"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[package] = importlib.metadata.version(package)
    versions["source_sha256"] = source_hash()
    return RunConfig(
        kind="run",
        seed=spec.seed,
        created_at=time.time(),
        versions=versions,
        profiles={name: profile.model_dump(mode="json") for name, profile in profiles.items()},
        agent=",".join(spec.agents) if spec.agent_command is None else spec.agents[0],
        transport=spec.transport,
        suite=spec.suite,
        domains=domains,
        epsilons=list(spec.epsilons),
        trials=spec.trials,
        command=[Path(sys.argv[0]).name, *sys.argv[1:]],
        settings={
            "agents": spec.agents,
            "agent_command": spec.agent_command,
            "profile_names": spec.profiles,
            "concurrency": spec.concurrency,
            "timeout_s": spec.timeout_s,
            "task_patterns": spec.task_patterns,
            "paraphrase_model": spec.paraphrase_model,
            "paraphrase_base_url": spec.paraphrase_base_url,
            "model": spec.model,
            "base_url": spec.base_url,
            "services": spec.remote.services if spec.remote else None,
            "models": spec.all_models(),
            "model_endpoints": {m: spec.endpoint(m).base_url for m in spec.all_models()},
            "model_via_proxy": spec.model_via_proxy,
            "agent_models": {plan.label: plan.model for plan in plans if plan.model},
            "prices_per_million": {m: list(price) for m, price in spec.prices.items()},
            "mock_model": mock or {},
            "memory": _memory_settings(spec),
            "embedding_model": spec.embedding_model,
            "blocks": [block.model_dump(mode="json") for block in spec.blocks],
            "schedule": spec.schedule.model_dump(mode="json") if spec.schedule else None,
            "schedule_mode": spec.schedule_mode if spec.schedule else None,
        },
    )


def _memory_settings(spec: RunSpec) -> dict[str, Any] | None:
    """Which memory the run read, exactly (its manifest and file hashes)."""
    if spec.memory is None:
        return None
    manifest = json.loads((spec.memory / MANIFEST).read_text())
    return {
        "dir": str(spec.memory.resolve()),
        "manifest": manifest,
        "sha256": fingerprint(spec.memory),
    }


def _prepare_run_dir(
    spec: RunSpec, config: RunConfig, tasks: Sequence[Any], grid: Sequence[EpisodeSpec]
) -> set[str]:
    """Create or check the run directory; return the episodes already recorded."""
    config_path = spec.out / CONFIG_FILE
    episodes_path = spec.out / EPISODES_FILE
    if config_path.exists():
        if not spec.resume:
            raise RunError(
                f"{spec.out} already holds a run; "
                "pass --resume to finish it, or choose another --out"
            )
        stored = RunConfig.model_validate_json(config_path.read_text())
        if _grid_identity(stored) != _grid_identity(config):
            raise RunError(
                f"{spec.out} holds a different grid; --resume needs the same flags as the first run"
            )
        if _shard_text(stored.settings.get("shard")) != _shard_text(config.settings["shard"]):
            raise RunError(
                f"{spec.out} holds {_shard_text(stored.settings.get('shard'))}, "
                f"not {_shard_text(config.settings['shard'])}; --resume needs the same --shard"
            )
        for name in (EPISODES_FILE, CALLS_FILE):
            _drop_torn_line(spec.out / name)
        if not episodes_path.exists():
            return set()
        try:
            return {record.episode for record in read_jsonl(episodes_path, EpisodeRecord)}
        except RunDirError as bad:
            raise RunError(str(bad)) from bad
    if spec.resume:
        raise RunError(f"nothing to resume: {config_path} does not exist")
    spec.out.mkdir(parents=True, exist_ok=True)
    config_path.write_text(config.model_dump_json(indent=2))
    with (spec.out / TASKS_FILE).open("w", encoding="utf-8") as handle:
        for task in tasks:
            handle.write(TaskMeta.model_validate(task.metadata()).model_dump_json() + "\n")
    with (spec.out / GRID_FILE).open("w", encoding="utf-8") as handle:
        for episode in sorted(grid, key=lambda e: e.episode_id):
            entry = GridEntry(
                episode=episode.episode_id,
                episode_key=episode.key,
                agent=episode.agent,
                task_id=episode.task_id,
                domain=episode.domain,
                epsilon=episode.epsilon,
                profile=episode.profile,
                trial=episode.trial,
            )
            handle.write(entry.model_dump_json() + "\n")
    return set()


def _shard_text(shard: Any) -> str:
    if not shard:
        return "the whole grid"
    return f"shard {shard['index']} of {shard['count']}"


def _drop_torn_line(path: Path) -> None:
    """Cut a last line that has no newline (a writer killed mid-line, e.g. by kill -9), so
    the lines appended by --resume start on a line of their own."""
    if not path.is_file():
        return
    with path.open("rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        position = size
        while position > 0:
            step = min(1 << 16, position)
            handle.seek(position - step)
            chunk = handle.read(step)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                handle.truncate(position - step + cut + 1)
                return
            position -= step
        handle.truncate(0)


def _grid_identity(config: RunConfig) -> tuple[Any, ...]:
    settings = config.settings
    return (
        settings.get("agents"),
        settings.get("agent_command"),
        settings.get("profile_names"),
        settings.get("task_patterns"),
        settings.get("paraphrase_model"),
        settings.get("models") or ([settings["model"]] if settings.get("model") else []),
        config.suite,
        config.domains,
        config.epsilons,
        config.trials,
        config.transport,
        config.seed,
        settings.get("blocks") or [],
    )
