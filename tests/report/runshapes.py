"""Run directories in the shapes the report must handle, built in a second or two.

The records follow records.py; the behaviour is a caricature (agents of three skills meeting
faults at rate λ), enough to give the report every section, interval and episode link.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from chaosproxy.records import (
    CALLS_FILE,
    CONFIG_FILE,
    EPISODE_DIR,
    EPISODES_FILE,
    JOURNAL_FILE,
    TASKS_FILE,
    EpisodeRecord,
    RunConfig,
    TaskMeta,
)

SKILL = {"naive": 0.35, "retry": 0.8, "robust": 0.97}
"""Chance that an agent gets past a fault it saw."""
FAULTS = (("TransientTimeout", 504), ("SoftRateLimit", 429), ("ServerError", 503))


@dataclass(frozen=True)
class Shape:
    agents: tuple[str, ...]
    domains: tuple[str, ...]
    tasks_per_domain: int
    profiles: tuple[str, ...]
    epsilons: tuple[float, ...]
    trials: int


QUICKSTART = Shape(
    ("naive", "retry", "robust"),
    ("scheduling", "travel", "support", "ecommerce"),
    16,
    ("lambda0.0", "lambda0.2"),
    (0.0,),
    2,
)
SMALL = Shape(("naive", "robust"), ("travel",), 4, ("lambda0.0", "lambda0.2"), (0.0, 0.1), 3)
ONE_TRIAL = Shape(("retry",), ("travel",), 3, ("lambda0.0", "lambda0.2"), (0.0,), 1)


def build_run(path: Path, shape: Shape, seed: int = 7) -> int:
    """Write a run directory of this shape (with journals and stdout); returns episodes."""
    rng = random.Random(seed)
    path.mkdir(parents=True, exist_ok=True)
    config = RunConfig(
        kind="run",
        seed=seed,
        created_at=1_790_000_000.0,
        versions={"chaosproxy": "0.1.0", "pydantic": "2.11"},
        profiles={
            p: {"name": p, "failure_rate": float(p.removeprefix("lambda"))} for p in shape.profiles
        },
        agent=",".join(shape.agents),
        transport="rest",
        suite="reliabilitybench",
        domains=list(shape.domains),
        epsilons=list(shape.epsilons),
        trials=shape.trials,
        settings={"agents": list(shape.agents), "profile_names": list(shape.profiles)},
        command=[
            "chaosproxy",
            "run",
            *[f"--agent={a}" for a in shape.agents],
            "--trials",
            str(shape.trials),
        ],
    )
    (path / CONFIG_FILE).write_text(config.model_dump_json(indent=2), encoding="utf-8")
    tasks = [f"{d}-{t:02d}" for d in shape.domains for t in range(shape.tasks_per_domain)]
    with (path / TASKS_FILE).open("w", encoding="utf-8") as handle:
        for task in tasks:
            meta = TaskMeta(
                id=task,
                domain=task.rsplit("-", 1)[0],
                description="d",
                l_min=2,
                difficulty="simple",
            )
            handle.write(meta.model_dump_json() + "\n")
    count = 0
    ts = 1_790_000_000.0
    with (
        (path / CALLS_FILE).open("w", encoding="utf-8") as calls,
        (path / EPISODES_FILE).open("w", encoding="utf-8") as episodes,
    ):
        for agent in shape.agents:
            for task in tasks:
                for eps in shape.epsilons:
                    for profile in shape.profiles:
                        lam = float(profile.removeprefix("lambda"))
                        for trial in range(1, shape.trials + 1):
                            key = f"{task}~e{eps:g}~{profile}~t{trial}"
                            episode = f"{agent}~{key}"
                            ok, steps = True, 0
                            for step in range(1, 4):
                                ts += 0.05
                                steps = step
                                fault = rng.random() < lam
                                calls.write(_call(episode, key, step, ts, fault, rng, seed))
                                if fault and rng.random() > SKILL[agent]:
                                    ok = False
                                    break
                            ok = ok and rng.random() > eps * 0.5
                            record = EpisodeRecord(
                                episode=episode,
                                episode_key=key,
                                task_id=task,
                                domain=task.rsplit("-", 1)[0],
                                epsilon=eps,
                                profile=profile,
                                trial=trial,
                                agent=agent,
                                transport="rest",
                                seed=seed,
                                outcome="completed",
                                success=ok,
                                t_success=steps if ok else None,
                                started_at=ts,
                                duration_s=0.2,
                                task_text="d",
                            )
                            episodes.write(record.model_dump_json() + "\n")
                            folder = path / EPISODE_DIR / episode
                            folder.mkdir(parents=True)
                            (folder / JOURNAL_FILE).write_text("{}", encoding="utf-8")
                            (folder / "stdout.txt").write_text("done\n", encoding="utf-8")
                            count += 1
    return count


def _call(
    episode: str, key: str, step: int, ts: float, fault: bool, rng: random.Random, seed: int
) -> str:
    record: dict[str, object] = {
        "ts": ts,
        "run_seed": seed,
        "episode": episode,
        "episode_key": key,
        "step": step,
        "domain": key.split("-")[0],
        "tool": "search" if step == 1 else "book",
        "transport": "rest",
        "kind": "tool_call",
        "method": "POST",
        "path": "/x",
        "upstream_called": True,
        "status": 200,
        "latency_ms": 2.0,
    }
    if fault:
        name, status = FAULTS[rng.randrange(len(FAULTS))]
        record.update(
            fault={"name": name, "stage": "before", "recoverable": True},
            fault_delivered=True,
            status=status,
            outcome="http_error",
            upstream_called=False,
        )
    return json.dumps(record) + "\n"
