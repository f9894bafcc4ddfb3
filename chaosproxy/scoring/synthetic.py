"""A synthetic run directory of any size, for the scorer's benchmark and tests.

The records follow records.py exactly; the behaviour is a caricature (a retrying agent
meeting faults at rate λ), good enough to exercise every code path at scale.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

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

TOOLS = ("search_flights", "hold_flight", "confirm_booking", "get_itinerary")
# fault name, HTTP status the agent sees, recoverable
FAULTS: tuple[tuple[str, int, bool], ...] = (
    ("TransientTimeout", 504, True),
    ("SoftRateLimit", 429, True),
    ("ServerError", 503, True),
    ("PartialResponse", 200, True),
    ("HighLatency", 200, True),
)


def write_synthetic_run(
    path: Path,
    *,
    calls: int = 10_000,
    tasks: int = 20,
    trials: int = 4,
    epsilons: tuple[float, ...] = (0.0, 0.1),
    profiles: tuple[str, ...] = ("lambda0.0", "lambda0.2"),
    agent: str = "retry",
    journals: bool = False,
    seed: int = 7,
) -> int:
    """Write a run directory with about `calls` tool calls; returns the episode count."""
    rng = random.Random(seed)
    path.mkdir(parents=True, exist_ok=True)
    config = RunConfig(
        kind="run",
        seed=seed,
        created_at=1.7e9,
        versions={"chaosproxy": "synthetic"},
        agent=agent,
        transport="rest",
        suite="synthetic",
        domains=["travel"],
        epsilons=list(epsilons),
        trials=trials,
    )
    (path / CONFIG_FILE).write_text(config.model_dump_json(), encoding="utf-8")
    with (path / TASKS_FILE).open("w", encoding="utf-8") as handle:
        for t in range(tasks):
            meta = TaskMeta(
                id=f"task-{t:03d}",
                domain="travel",
                description="synthetic",
                l_min=3,
                difficulty="simple",
            )
            handle.write(meta.model_dump_json() + "\n")
    grid = [
        (t, e, p, k)
        for t in range(tasks)
        for e in epsilons
        for p in profiles
        for k in range(1, trials + 1)
    ]
    per_episode = max(1, calls // max(1, len(grid)))
    written = 0
    ts = 1.7e9
    with (
        (path / CALLS_FILE).open("w", encoding="utf-8") as log,
        (path / EPISODES_FILE).open("w", encoding="utf-8") as episodes,
    ):
        for index, (t, eps, profile, trial) in enumerate(grid):
            lam = float(profile.removeprefix("lambda") or 0)
            episode = f"ep{index:07d}"
            key = f"task-{t:03d}~{eps:g}~{profile}~{trial}"
            faulted, step = 0, 0
            while step < per_episode:
                step += 1
                ts += 0.01
                tool = TOOLS[(step - 1) % len(TOOLS)]
                log.write(_call(rng, episode, key, step, tool, ts, lam, seed))
                written += 1
                faulted += rng.random() < lam
            success = rng.random() > lam * 0.5 * min(faulted, 2)
            record = EpisodeRecord(
                episode=episode,
                episode_key=key,
                task_id=f"task-{t:03d}",
                domain="travel",
                epsilon=eps,
                profile=profile,
                trial=trial,
                agent=agent,
                transport="rest",
                seed=seed,
                outcome="completed",
                success=success,
                t_success=step if success else None,
                started_at=ts,
                duration_s=0.5,
                task_text="synthetic",
            )
            episodes.write(record.model_dump_json() + "\n")
            if journals:
                _journal(path, episode, step, success)
    return len(grid)


def _call(
    rng: random.Random,
    episode: str,
    key: str,
    step: int,
    tool: str,
    ts: float,
    lam: float,
    seed: int,
) -> str:
    arguments = {"flight_id": f"UA{100 + step % 7}", "passenger_name": "Ana Ruiz"}
    record: dict[str, Any] = {
        "ts": ts,
        "run_seed": seed,
        "episode": episode,
        "episode_key": key,
        "step": step,
        "domain": "travel",
        "tool": tool,
        "transport": "rest",
        "kind": "tool_call",
        "method": "POST",
        "path": f"/travel/tools/{tool}",
        "arguments": arguments,
        "forwarded_arguments": arguments,
        "upstream_called": True,
        "upstream_status": 200,
        "status": 200,
        "outcome": "ok",
        "latency_ms": 1.0 + rng.random(),
    }
    if rng.random() < lam:
        name, status, recoverable = FAULTS[rng.randrange(len(FAULTS))]
        record["fault"] = {
            "name": name,
            "stage": "before",
            "recoverable": recoverable,
            "params": {},
            "draw": {
                "seed": seed,
                "episode_key": key,
                "tool": tool,
                "position": step,
                "purpose": "fault",
            },
        }
        record["fault_delivered"] = True
        record["status"] = status
        if status >= 400:
            record["outcome"] = "http_error" if status != 504 else "timeout"
            record["upstream_called"] = False
        if status == 429:
            record["retry_after_s"] = 0.005
    return json.dumps(record) + "\n"


def _journal(path: Path, episode: str, steps: int, success: bool) -> None:
    folder = path / EPISODE_DIR / episode
    folder.mkdir(parents=True, exist_ok=True)
    state = {"bookings": [{"flight_id": "UA101"}] if success else []}
    journal = {
        "episode": episode,
        "domain": "travel",
        "initial_state": {"bookings": []},
        "entries": [
            {
                "seq": 1,
                "step": steps,
                "tool": "confirm_booking",
                "arguments": {"flight_id": "UA101"},
                "result": {},
                "state_after": state,
                "transport": "rest",
            }
        ],
        "final_state": state,
    }
    (folder / JOURNAL_FILE).write_text(json.dumps(journal), encoding="utf-8")
