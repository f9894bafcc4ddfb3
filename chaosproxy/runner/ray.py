"""`chaosproxy run --ray`: the grid's episodes on a Ray cluster (docs/scale.md).

The only module that imports Ray (`chaosproxy run` without `--ray` never loads it). The
driver plans the grid, writes the run directory and is its only writer; workers (Ray
actors) each keep one `Environment` (services and proxy on their node's loopback, ports of
their own) and run small batches of episodes that they pull from the driver, so a faster
node takes more. A worker returns each finished episode whole — its record, its calls and
its files (journal, stdout) — and the driver writes them. A batch whose worker dies goes
back on the queue; nothing of its attempts was written, so nothing is counted twice.

Fault draws hash (seed, episode key, tool, position), so an episode draws the same faults
on any worker: a scripted agent's results equal a plain run's on the same seed.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayError

from chaosproxy.agents.llm import UsageLedger
from chaosproxy.pacing import RatePacer
from chaosproxy.records import (
    CALLS_FILE,
    EPISODE_DIR,
    EPISODES_FILE,
    EpisodeRecord,
    append_jsonl,
)
from chaosproxy.runner.episode import EpisodeSettings
from chaosproxy.runner.grid import EpisodeSpec
from chaosproxy.runner.models import AgentPlan
from chaosproxy.runner.perturb import Perturbed
from chaosproxy.runner.progress import Progress

OBJECT_STORE_BYTES = 100 * 1024 * 1024
"""A local Ray's object store: results are small (≈72 KB an episode), Ray's default is 30 %
of the machine's memory."""
START_TIMEOUT_S = 180.0
"""How long a worker may take to start its services and proxy."""
WORKER_RESTARTS = 1
"""Ray restarts a dead worker this often; after that it is dropped (its batch requeued)."""
PACER_NAME = "chaosproxy-model-pacer"
LOCAL_WORKERS = 4
"""A local Ray's default workers: one per CPU, at most this many (each is an Environment)."""
LOCAL_NODE_IP = "127.0.0.2"
"""A local Ray's node address: on loopback, but not 127.0.0.1, which Ray replaces by the
machine's network address (on Linux; elsewhere Ray keeps a local Ray on loopback anyway)."""


class RayRunError(RuntimeError):
    """Ray could not run the grid (no cluster, no worker started, every worker lost)."""


@dataclass
class EpisodeResult:
    """One finished episode as a worker returns it: the driver writes these and only these."""

    record: str
    """The EpisodeRecord as a JSON line (without its newline)."""
    calls: bytes
    """Its lines of calls.jsonl (this attempt's), in log order."""
    files: dict[str, bytes]
    """RUN_DIR/episodes/<episode>/<name>: journal.json, stdout.txt, stderr.txt, …"""


@dataclass
class BatchResult:
    node: str
    results: list[EpisodeResult]


class _Collect:
    """The progress `_run_all` feeds, inside a worker: it keeps the finished records."""

    def __init__(self) -> None:
        self.records: list[EpisodeRecord] = []

    def start(self, spec: EpisodeSpec) -> None:
        pass

    def add(self, record: EpisodeRecord) -> None:
        self.records.append(record)


class EpisodeWorker:
    """One worker: one Environment on its node, episodes run in batches the driver sends.

    The environment starts on the first call (also after Ray restarts a dead worker), into a
    directory of its own that the driver never sees; a batch's episodes leave it whole."""

    def __init__(
        self,
        spec: Any,
        domains: list[str],
        profiles: dict[str, Any],
        plans: list[AgentPlan],
        pacer: str | None = None,
    ) -> None:
        self._spec = spec
        self._domains = domains
        self._profiles = profiles
        self._plans = plans
        self._pacer = pacer
        self._lock = asyncio.Lock()
        self._stack: contextlib.AsyncExitStack | None = None
        self._dir: Path | None = None
        self._pending: dict[str, list[bytes]] = {}
        self._state: dict[str, Any] = {}

    def node(self) -> str:
        return str(ray.util.get_node_ip_address())

    async def hello(self) -> dict[str, Any]:
        """Start the environment; say where this worker runs."""
        await self._ensure_started()
        return {
            "node": self.node(),
            "node_id": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
        }

    async def _ensure_started(self) -> None:
        async with self._lock:
            if self._stack is not None:
                return
            from chaosproxy.runner.run import _environment, _load_memory, _make, _via_proxy

            _remove_folders()  # a restarted worker: its dead incarnation's folder
            self._dir = Path(tempfile.mkdtemp(prefix=_folder_prefix()))
            spec = replace(self._spec, out=self._dir, resume=False, ray=None)
            stack = contextlib.AsyncExitStack()
            try:
                pacer = RayPacer(self._pacer) if self._pacer is not None else None
                adapter = await stack.enter_async_context(
                    _environment(spec, self._domains, self._profiles, model_pacer=pacer)
                )
                limits = httpx.Limits(max_connections=spec.concurrency * 4)
                http = await stack.enter_async_context(
                    httpx.AsyncClient(timeout=30.0, limits=limits)
                )
                memory = _load_memory(spec)
            except BaseException:
                await stack.aclose()  # services and proxy started so far are stopped
                raise
            ledger = UsageLedger()
            agents = {plan.label: _make(plan, spec, ledger, memory) for plan in self._plans}
            self._state = {
                "spec": spec,
                "adapter": adapter,
                "http": http,
                "ledger": ledger,
                "agent_for": _via_proxy(self._plans, spec, ledger, memory, agents, adapter)
                if spec.model_via_proxy
                else (lambda episode: agents.get(episode.agent)),
                "settings": EpisodeSettings(
                    self._dir,
                    spec.seed,
                    spec.transport,
                    spec.timeout_s,
                    spec.agent_command,
                    spec.agent_isolation,
                ),
                "models": {plan.label: plan.model for plan in self._plans if plan.model},
            }
            self._stack = stack

    async def run_batch(self, batch: list[tuple[EpisodeSpec, Perturbed]]) -> BatchResult:
        from chaosproxy.runner.run import _run_all

        await self._ensure_started()
        state = self._state
        assert self._dir is not None
        collect = _Collect()
        await _run_all(
            [episode for episode, _ in batch],
            {(episode.task_id, episode.epsilon): text for episode, text in batch},
            state["agent_for"],
            state["adapter"],
            state["settings"],
            state["http"],
            replace(state["spec"], concurrency=len(batch)),
            collect,  # type: ignore[arg-type]
            asyncio.Event(),
            state["ledger"],
            state["models"],
        )
        self._take_calls()
        results = []
        for record in collect.records:
            lines = self._pending.pop(record.episode, [])
            mine = [line for line in lines if _attempt_of(line) in (None, record.attempt)]
            folder = self._dir / EPISODE_DIR / record.episode
            files = {}
            if folder.is_dir():
                files = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
                shutil.rmtree(folder, ignore_errors=True)
            results.append(EpisodeResult(record.model_dump_json(), b"".join(mine), files))
        (self._dir / EPISODES_FILE).unlink(missing_ok=True)
        return BatchResult(self.node(), results)

    def _take_calls(self) -> None:
        """Move the local calls.jsonl into memory by episode and empty it. The proxy writes
        it on this event loop with O_APPEND, so nothing is written between read and cut."""
        assert self._dir is not None
        path = self._dir / CALLS_FILE
        if not path.is_file():
            return
        with path.open("rb+") as handle:
            data = handle.read()
            end = data.rfind(b"\n") + 1
            rest = data[end:]
            handle.seek(0)
            handle.truncate(0)
            if rest:
                handle.write(rest)
        for line in data[:end].splitlines(keepends=True):
            episode = _episode_of(line)
            if episode is not None:
                self._pending.setdefault(episode, []).append(line)

    async def close(self) -> None:
        if self._stack is not None:
            stack, self._stack = self._stack, None
            await stack.aclose()
        _remove_folders()


def _folder_prefix() -> str:
    """A worker's folders are named by its actor id, which survives a Ray restart."""
    return f"chaosproxy-ray-{ray.get_runtime_context().get_actor_id()[:16]}-"


def _remove_folders() -> None:
    """This worker's folders, including those of its incarnations that died (kill -9)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_folder_prefix()}*"):
        shutil.rmtree(folder, ignore_errors=True)


def _field(line: bytes, name: str) -> str | None:
    import orjson

    try:
        value = orjson.loads(line).get(name)
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _episode_of(line: bytes) -> str | None:
    return _field(line, "episode")


def _attempt_of(line: bytes) -> str | None:
    return _field(line, "attempt")


class ModelBucket:
    """The cluster's model-call budget, held once (a Ray named actor) for every worker.

    `chaosproxy.pacing.RatePacer`'s rule (each call reserves `60/rpm` s of the request
    timeline and `estimated_tokens * 60/tpm` s of the token timeline, and starts when both
    are free, in the order calls asked) on this actor's clock; `reserve` answers how long
    the caller waits, so a call costs one round trip and nobody polls.
    """

    def __init__(self, rpm: int | None, tpm: int | None) -> None:
        self._pacer = RatePacer(rpm, tpm)
        self.reserved = 0

    def reserve(self, estimated_tokens: int) -> float:
        """Take a slot for one call; the seconds until it may start."""
        self.reserved += 1
        return self._pacer.reserve(estimated_tokens) - time.monotonic()

    def settle(self, estimated_tokens: int, actual_tokens: int) -> None:
        self._pacer.settle(estimated_tokens, actual_tokens)

    def count(self) -> int:
        """Calls reserved so far (cluster-wide)."""
        return self.reserved


class RayPacer:
    """`chaosproxy.pacing.ModelPacer` backed by the cluster's named `ModelBucket`: every
    worker's proxy waits on the same budget before an upstream model call."""

    def __init__(self, name: str = PACER_NAME) -> None:
        self._bucket = ray.get_actor(name)

    async def acquire(self, estimated_tokens: int) -> None:
        wait = await self._bucket.reserve.remote(estimated_tokens)
        if wait > 0:
            await asyncio.sleep(wait)

    def settle(self, estimated_tokens: int, actual_tokens: int) -> None:
        self._bucket.settle.remote(estimated_tokens, actual_tokens)


@dataclass
class _Worker:
    handle: Any
    index: int
    node: str = "?"
    pid: int = 0
    failures: int = 0
    in_flight: int = 0
    alive: bool = True


def _connect(address: str, workers: int | None) -> bool:
    """Join the cluster at `address` (`auto`: the running one) or start a small local one
    on loopback (`local`). True when this process started Ray (ray.shutdown stops it)."""
    if address == "local":
        ray.init(
            _node_ip_address=LOCAL_NODE_IP if sys.platform == "linux" else None,
            include_dashboard=False,
            num_cpus=workers or os.cpu_count() or 1,
            object_store_memory=OBJECT_STORE_BYTES,
            log_to_driver=False,
            logging_level="warning",
        )
        return True
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": "warning"}
    if address == "auto":
        with contextlib.suppress(Exception):  # Ray's own lookup (RAY_ADDRESS, the last `ray start`)
            from ray._private.services import canonicalize_bootstrap_address

            address = canonicalize_bootstrap_address("auto") or address
    host = urlsplit(f"//{address.removeprefix('ray://')}").hostname
    if host and host.startswith("127.") and host != "127.0.0.1":
        # a cluster on loopback: this driver is on that node (Ray would otherwise look for
        # a node at the machine's own address)
        options["_node_ip_address"] = host
    ray.init(address=address, **options)
    return False


def _say(text: str) -> None:
    print(f"ray: {text}", file=sys.stderr, flush=True)


def _write(out: Path, result: EpisodeResult) -> EpisodeRecord:
    """An episode into the run directory: files and calls first, the record last (a record
    marks a finished episode; without it --resume runs the episode again)."""
    record = EpisodeRecord.model_validate_json(result.record)
    folder = out / EPISODE_DIR / record.episode
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in result.files.items():
        (folder / Path(name).name).write_bytes(data)
    if result.calls:
        with (out / CALLS_FILE).open("ab") as handle:
            handle.write(result.calls)
    append_jsonl(out / EPISODES_FILE, record)
    return record


async def run_on_ray(
    address: str,
    pending: Sequence[EpisodeSpec],
    texts: dict[tuple[str, float], Perturbed],
    plans: Sequence[AgentPlan],
    spec: Any,
    domains: list[str],
    profiles: dict[str, Any],
    progress: Progress,
    stop: asyncio.Event,
    budget: Any,
) -> float:
    """Run `pending` on Ray workers; write every finished episode into `spec.out`. Returns
    the seconds spent running episodes (from the workers ready to the last result)."""
    started = time.monotonic()
    try:
        owned = _connect(address, spec.ray_workers)
    except (ConnectionError, RuntimeError, ValueError) as failure:
        raise RayRunError(f"could not reach Ray at {address}: {failure}") from failure
    workers: list[_Worker] = []
    bucket = None
    try:
        pacer = None
        if spec.rpm or spec.tpm:
            pacer = f"{PACER_NAME}-{uuid.uuid4().hex[:8]}"  # one per run, runs may share Ray
            bucket = (
                ray.remote(num_cpus=0)(ModelBucket).options(name=pacer).remote(spec.rpm, spec.tpm)
            )
        count = spec.ray_workers or (
            min(os.cpu_count() or 1, LOCAL_WORKERS)
            if owned
            else max(1, len([n for n in ray.nodes() if n.get("Alive")]))
        )
        actor = ray.remote(EpisodeWorker).options(
            num_cpus=1,
            max_restarts=WORKER_RESTARTS,
            max_concurrency=64,
            scheduling_strategy="SPREAD",
        )
        plan_list = list(plans)
        for index in range(count):
            handle = actor.remote(spec, domains, profiles, plan_list, pacer)
            workers.append(_Worker(handle, index))
        hellos: asyncio.Future[list[Any]] = asyncio.gather(
            *(asyncio.wrap_future(w.handle.hello.remote().future()) for w in workers)
        )
        stopper: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        done, _ = await asyncio.wait(
            [hellos, stopper], timeout=START_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED
        )
        stopper.cancel()
        if stop.is_set():
            hellos.cancel()
            return 0.0
        if not done:
            hellos.cancel()
            raise RayRunError(
                f"{count} Ray worker(s) did not start within {START_TIMEOUT_S:g} s "
                "(each needs 1 CPU: is the cluster big enough for --ray-workers?)"
            )
        try:
            infos = hellos.result()
        except RayError as failure:
            raise RayRunError(f"a Ray worker could not start: {failure}") from failure
        for worker, info in zip(workers, infos, strict=True):
            worker.node, worker.pid = info["node"], info["pid"]
        where = ", ".join(f"{w.node} pid {w.pid}" for w in workers)
        _say(
            f"{count} worker(s) on {len({w.node for w in workers})} node(s) ({where}), "
            f"ready after {time.monotonic() - started:.1f} s"
        )
        progress.workers_ready()
        ready = time.monotonic()
        await _dispatch(workers, pending, texts, spec, progress, stop, budget)
        return time.monotonic() - ready
    finally:
        await _shutdown(workers, bucket, owned)


async def _dispatch(
    workers: list[_Worker],
    pending: Sequence[EpisodeSpec],
    texts: dict[tuple[str, float], Perturbed],
    spec: Any,
    progress: Progress,
    stop: asyncio.Event,
    budget: Any,
) -> None:
    """Hand out batches (two in flight per worker, so one's tail does not idle it); write
    what comes back; requeue what a dead worker held."""
    queue: deque[EpisodeSpec] = deque(pending)
    size = max(1, math.ceil(spec.concurrency / 2))
    flying: dict[asyncio.Future[Any], tuple[_Worker, list[EpisodeSpec]]] = {}

    def submit(worker: _Worker) -> None:
        while (
            worker.alive
            and worker.in_flight < 2
            and queue
            and not stop.is_set()
            and budget.reached() is None
        ):
            batch = [queue.popleft() for _ in range(min(size, len(queue)))]
            payload = [(e, texts[(e.task_id, e.epsilon)]) for e in batch]
            ref = worker.handle.run_batch.remote(payload)
            flying[asyncio.wrap_future(ref.future())] = (worker, batch)
            worker.in_flight += 1

    for worker in workers:
        submit(worker)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        while flying:
            done, _ = await asyncio.wait([*flying, stopper], return_when=asyncio.FIRST_COMPLETED)
            if stop.is_set():
                return  # in-flight batches are dropped: nothing of them was written
            for future in done:
                worker, batch = flying.pop(future)
                worker.in_flight -= 1
                try:
                    result: BatchResult = future.result()
                except RayActorError as lost:
                    worker.failures += 1
                    queue.extendleft(reversed(batch))
                    if worker.failures > WORKER_RESTARTS:
                        worker.alive = False
                    _say(
                        f"worker {worker.index} on {worker.node} (pid {worker.pid}) lost: "
                        f"{len(batch)} episode(s) back on the queue"
                        + ("" if worker.alive else "; worker dropped")
                        + f" ({type(lost).__name__})"
                    )
                except RayError as failure:  # the worker's code raised: no retry cures that
                    raise RayRunError(
                        f"worker {worker.index} on {worker.node} failed: {failure}"
                    ) from failure
                else:
                    worker.node = result.node
                    for item in result.results:
                        record = _write(spec.out, item)
                        budget.add(record)
                        progress.add(record, node=result.node)
            for worker in workers:
                submit(worker)
            if queue and not flying and not stop.is_set() and budget.reached() is None:
                raise RayRunError(
                    f"every Ray worker was lost; {len(queue)} episode(s) not run "
                    "(finish with --resume)"
                )
    finally:
        stopper.cancel()
        for future in flying:
            future.cancel()


async def _shutdown(workers: list[_Worker], bucket: Any, owned: bool) -> None:
    """Stop the workers' environments, then the workers, the pacer and (if this process
    started it) Ray itself."""
    closing = [w.handle.close.remote() for w in workers if w.alive]
    if closing:
        with contextlib.suppress(RayActorError, GetTimeoutError, TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*(asyncio.wrap_future(c.future()) for c in closing)), 30
            )
    for worker in workers:
        with contextlib.suppress(Exception):
            ray.kill(worker.handle, no_restart=True)
    if bucket is not None:
        with contextlib.suppress(Exception):
            ray.kill(bucket, no_restart=True)
    if ray.is_initialized():
        ray.shutdown()
    del owned  # ray.shutdown() stops a local cluster this process started, and only that
