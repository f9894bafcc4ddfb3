"""Interrupted runs resume to exactly the uninterrupted result (issue 27: attempts).

A real `chaosproxy run` subprocess of a small scripted grid is stopped mid-episode by
Ctrl-C (SIGINT to its process group, as a terminal sends it), SIGTERM, or kill -9 of the
whole group (a lost node), then finished with `--resume`. Its records, the calls the
scorer reads, the journals and results.json must equal an uninterrupted run's, up to
wall-clock fields. Before attempts, the killed attempt's calls stayed in calls.jsonl under
the same episode id and inflated its re-run's counts, and the in-flight episode could be
recorded as an `infra_error` that --resume never re-ran.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from chaosproxy.records import (
    CALLS_FILE,
    EPISODE_DIR,
    EPISODES_FILE,
    JOURNAL_FILE,
    CallRecord,
    EpisodeRecord,
    read_jsonl,
)
from chaosproxy.scoring import score_runs
from chaosproxy.scoring.rundir import iter_calls

GRID = [
    "--agent", "retry", "--domains", "travel", "--tasks", "travel-0*",
    "--profile", "lambda0.2", "--trials", "1", "--concurrency", "2", "--no-score",
]  # fmt: skip
WALL_CLOCK = {"ts", "latency_ms", "started_at", "duration_s", "model_latency_s", "attempt"}
TIMING_RESULTS = {"latency_s", "retry_storms", "ignored_retry_after", "runs", "run", "label"}


def chaosproxy(*args: str, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "chaosproxy.cli", *args, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def finish(process: subprocess.Popen[str]) -> str:
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    return output


def records(out: Path) -> list[EpisodeRecord]:
    path = out / EPISODES_FILE
    return list(read_jsonl(path, EpisodeRecord)) if path.exists() else []


def raw_calls(out: Path) -> list[CallRecord]:
    path = out / CALLS_FILE
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [CallRecord.model_validate_json(line) for line in lines if line.endswith("}")]


def _strip(value: Any, drop: set[str]) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v, drop) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_strip(v, drop) for v in value]
    return value


def snapshot(out: Path) -> dict[str, Any]:
    """What a run directory says, without wall-clock fields: records by episode, the
    calls the scorer reads (per episode, in log order), journals and results."""
    by_episode = {r.episode: r.model_dump(mode="json") for r in records(out)}
    calls: dict[str, list[Any]] = defaultdict(list)
    for call in iter_calls(out):
        calls[call.episode].append(_strip(call.model_dump(mode="json"), WALL_CLOCK))
    journals = {
        episode: _strip(
            json.loads((out / EPISODE_DIR / episode / JOURNAL_FILE).read_text()), WALL_CLOCK
        )
        for episode in by_episode
    }
    results = json.loads(score_runs([out]).results.model_dump_json())
    return {
        "records": _strip(dict(sorted(by_episode.items())), WALL_CLOCK),
        "calls": dict(sorted(calls.items())),
        "journals": journals,
        "results": _strip(results, TIMING_RESULTS),
    }


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("plain") / "run"
    finish(chaosproxy("run", *GRID, out=out))
    return out, snapshot(out)


def _in_flight(out: Path) -> set[str]:
    """Episodes with logged calls and no record yet."""
    done = {r.episode for r in records(out)}
    return {c.episode for c in raw_calls(out) if c.attempt is not None} - done


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "kill-9"])
def test_resume_after_an_interrupt_equals_the_plain_run(
    how: str, plain: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    process = chaosproxy("run", *GRID, out=out)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (len(records(out)) < 3 or not _in_flight(out)):
        time.sleep(0.02)
    if how == "ctrl-c":
        os.killpg(process.pid, signal.SIGINT)
    elif how == "sigterm":
        process.send_signal(signal.SIGTERM)
    else:
        os.killpg(process.pid, signal.SIGKILL)
    output, _ = process.communicate(timeout=60)
    if how != "kill-9":
        assert process.returncode == 0, output
        assert "--resume" in output
    partial = records(out)
    total = len(plain[1]["records"])
    assert 3 <= len(partial) < total
    assert all(r.attempt for r in partial)
    # the interrupt landed inside an episode: its attempt logged calls and left no record
    recorded = {r.attempt for r in partial}
    orphans = {c.attempt for c in raw_calls(out) if c.attempt not in recorded}
    assert orphans, "the interrupt hit no episode in flight"
    assert not any(r.outcome == "infra_error" for r in partial), [r.error for r in partial]

    finish(chaosproxy("run", *GRID, "--resume", out=out))
    resumed = snapshot(out)
    assert [r.episode for r in records(out)][: len(partial)] == [r.episode for r in partial]
    assert len(records(out)) == total
    assert orphans & {c.attempt for c in raw_calls(out)} == orphans  # still in the log
    for part in ("records", "calls", "journals", "results"):
        assert resumed[part] == plain[1][part], part


def test_an_old_run_directory_scores_as_before(
    plain: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """Without attempt fields (a run directory written before them) every call counts."""
    source, _ = plain
    old = tmp_path / "old"
    old.mkdir()
    for name in ("config.json", "tasks.jsonl"):
        (old / name).write_text((source / name).read_text())
    for name in (EPISODES_FILE, CALLS_FILE):
        lines = (source / name).read_text().splitlines()
        stripped = [json.dumps(_strip(json.loads(line), {"attempt"})) for line in lines]
        (old / name).write_text("".join(line + "\n" for line in stripped))
    for journal in (source / EPISODE_DIR).glob(f"*/{JOURNAL_FILE}"):
        target = old / EPISODE_DIR / journal.parent.name / JOURNAL_FILE
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps(_strip(json.loads(journal.read_text()), {"attempt"})))
    with (source / CALLS_FILE).open() as handle:
        total = sum(1 for _ in handle)
    assert len(list(iter_calls(old))) == total
    assert snapshot(old)["results"] == plain[1]["results"]


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """`--shard 1/2` and `--shard 2/2` of the plain run's grid, run side by side."""
    base = tmp_path_factory.mktemp("shards")
    first = chaosproxy("run", *GRID, "--shard", "1/2", out=base / "s1")
    second = chaosproxy("run", *GRID, "--shard", "2/2", out=base / "s2")
    finish(first)
    finish(second)
    return base / "s1", base / "s2"


def merge(*paths: Path, out: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "chaosproxy.cli", "merge", *map(str, paths), "--out", str(out)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_shards_merged_equal_the_plain_run(
    shards: tuple[Path, Path], plain: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    s1, s2 = shards
    one, two = {r.episode for r in records(s1)}, {r.episode for r in records(s2)}
    assert one and two and not one & two
    assert one | two == set(plain[1]["records"])
    config = json.loads((s1 / "config.json").read_text())["settings"]
    assert config["shard"] == {"index": 1, "count": 2, "episodes": len(one)}
    assert config["grid"]["episodes"] == len(plain[1]["records"])

    merged = merge(s2, s1, out=tmp_path / "m21")  # the order the shards are named in
    assert merged.returncode == 0, merged.stderr
    assert f"{len(one | two)}/{len(one | two)} episodes" in merged.stdout
    assert snapshot(tmp_path / "m21") == plain[1]
    again = merge(s1, s2, out=tmp_path / "m12")
    assert again.returncode == 0, again.stderr
    for name in (EPISODES_FILE, CALLS_FILE):  # merging is a sort: the same bytes
        assert (tmp_path / "m12" / name).read_bytes() == (tmp_path / "m21" / name).read_bytes()

    # the plain run merged in as well: every episode twice, each kept once, same results
    doubled = merge(s1, plain[0], s2, out=tmp_path / "dup")
    assert doubled.returncode == 0, doubled.stderr
    assert f"{len(one | two)} episode(s) recorded by more than one shard" in doubled.stdout
    assert snapshot(tmp_path / "dup") == plain[1]


def test_a_missing_shard_is_reported_and_resume_runs_it(
    shards: tuple[Path, Path], plain: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    s1, s2 = shards
    out = tmp_path / "merged"
    merged = merge(s1, out=out)
    assert merged.returncode == 0, merged.stderr
    missing = {r.episode for r in records(s2)}
    assert f"{len(missing)} episode(s) missing" in merged.stdout
    assert "--resume" in merged.stdout
    finish(chaosproxy("run", *GRID, "--resume", out=out))
    assert snapshot(out) == plain[1]


def test_merge_refuses_shards_of_different_runs(shards: tuple[Path, Path], tmp_path: Path) -> None:
    s1, s2 = shards
    other = tmp_path / "other"
    shutil.copytree(s2, other)
    config = json.loads((other / "config.json").read_text())
    config["seed"] = 8
    config["versions"]["source_sha256"] = "0" * 64
    (other / "config.json").write_text(json.dumps(config))
    refused = merge(s1, other, out=tmp_path / "out")
    assert refused.returncode != 0
    assert "differ in seed" in refused.stderr
    assert "code: source hash" in refused.stderr
    assert not (tmp_path / "out" / "config.json").exists()

    shutil.copytree(s2, tmp_path / "texts")
    texts = tmp_path / "texts" / "texts.jsonl"
    texts.write_text(texts.read_text().replace("Book", "Reserve", 1))
    refused = merge(s1, tmp_path / "texts", out=tmp_path / "out")
    assert refused.returncode != 0
    assert "task texts (texts.jsonl)" in refused.stderr


def test_the_proxy_stamps_the_configured_attempt(tmp_path: Path) -> None:
    """`Environment.episode(attempt=…)` and the control API's PUT both set the attempt
    stamped on every call of the episode (tool calls and protocol traffic); after the
    episode is forgotten its calls carry none."""
    import httpx

    from chaosproxy import Environment

    with Environment(domains=["travel"], profile="lambda0.0", run_dir=tmp_path) as env:
        episode = env.episode(id="e1", attempt="a1")
        rest = episode.endpoints()["travel"].rest
        search = {"origin": "SFO", "dest": "JFK", "date": "2026-03-10"}
        with httpx.Client(timeout=10) as client:
            assert client.post(f"{rest}/tools/search_flights", json=search).status_code == 200
            assert client.get(f"{rest}/openapi.json").status_code == 200
            reply = client.put(
                f"{env.control_url}/_chaos/episodes/e1",
                json={"attempt": "a2"},
                headers={"Authorization": f"Bearer {env.token}"},
            )
            assert reply.status_code == 200 and reply.json()["attempt"] == "a2"
            assert client.post(f"{rest}/tools/search_flights", json=search).status_code == 200
            episode.end()
            assert client.post(f"{rest}/tools/search_flights", json=search).status_code == 200
    stamped = [(c.kind, c.attempt) for c in raw_calls(tmp_path)]
    assert stamped == [
        ("tool_call", "a1"),
        ("protocol", "a1"),
        ("tool_call", "a2"),
        ("tool_call", None),
    ]
