"""The README's main job, end to end: three scripted agents, four domains, λ0 and λ0.2.

One real run (services, proxy, agents over REST) is shared by the module's tests.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chaosproxy.records import CALLS_FILE, EPISODES_FILE, EpisodeRecord, read_jsonl
from chaosproxy.scoring import score_runs, write_outputs


@pytest.fixture(scope="module")
def main_run(tmp_path_factory: pytest.TempPathFactory, run_grid: Callable[..., Any]) -> Path:
    out = tmp_path_factory.mktemp("main") / "run"
    summary = run_grid(
        out,
        agents=["naive", "retry", "robust"],
        profiles=["lambda0.0", "lambda0.2"],
        concurrency=24,
    )
    assert summary.recorded == summary.total and not summary.interrupted
    write_outputs(score_runs([out]), out)
    return out


def episodes(run: Path) -> list[EpisodeRecord]:
    return list(read_jsonl(run / EPISODES_FILE, EpisodeRecord))


def group(results: dict[str, Any], agent: str, profile: str) -> dict[str, Any]:
    return next(g for g in results["groups"] if g["agent"] == agent and g["profile"] == profile)


def test_every_episode_is_evaluable(main_run: Path) -> None:
    records = episodes(main_run)
    assert len(records) == 3 * 2 * 62
    assert Counter(r.outcome for r in records) == {"completed": len(records)}


@pytest.mark.parametrize("agent", ["naive", "retry", "robust"])
def test_every_scripted_agent_solves_every_task_without_faults(main_run: Path, agent: str) -> None:
    failed = [
        r.task_id
        for r in episodes(main_run)
        if r.agent == agent and r.profile == "lambda0.0" and not r.success
    ]
    assert failed == []


def test_the_reliability_gap_between_policies_is_visible(main_run: Path) -> None:
    results = json.loads((main_run / "results.json").read_text())
    naive = group(results, "naive", "lambda0.2")["sr"]["value"]
    retry = group(results, "retry", "lambda0.2")["sr"]["value"]
    robust = group(results, "robust", "lambda0.2")["sr"]["value"]
    assert naive < retry <= robust
    assert robust - naive >= 0.1


def test_agents_met_the_same_faults_at_the_same_calls(main_run: Path) -> None:
    """The draw key leaves the agent out: the first call of an episode meets the same fault."""
    first_fault: dict[tuple[str, str], dict[str, Any]] = {}
    for line in (main_run / CALLS_FILE).read_text().splitlines():
        call = json.loads(line)
        if call["step"] == 1 and call["episode"].split("~")[2:4] == ["e0", "lambda0.2"]:
            agent = call["episode"].split("~")[0]
            fault = (call.get("fault") or {}).get("name")
            first_fault.setdefault((call["episode_key"], call["tool"]), {})[agent] = fault
    compared = [faults for faults in first_fault.values() if len(faults) == 3]
    assert len(compared) > 50
    assert all(len(set(faults.values())) == 1 for faults in compared)
    assert any(next(iter(faults.values())) is not None for faults in compared)


def test_numbers_are_reproducible_from_the_run_directory(main_run: Path, tmp_path: Path) -> None:
    first = json.loads((main_run / "results.json").read_text())
    again = score_runs([main_run]).results.model_dump(mode="json")
    for key in ("counts", "groups", "agents", "comparisons"):
        assert again[key] == first[key], key
