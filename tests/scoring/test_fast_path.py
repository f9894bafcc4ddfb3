"""The scorer's fast reader of calls.jsonl (msgspec structs, scoring.callrows) against the
reference reader (a pydantic CallRecord per line, `rundir.iter_calls`): on a real run, on
the same run rewritten in the older format, and with lines only pydantic's lax rules
accept, results.json and episodes.csv must be the same to the byte."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
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
    FaultRecord,
    GoalCheck,
    RunDirError,
    TokenUsage,
)
from chaosproxy.scoring import api, calls, episodes, quality, rundir, score_runs, write_outputs
from chaosproxy.scoring.callrows import CallRow, DrawRow, FaultRow
from chaosproxy.scoring.episoderows import (
    EpisodeRow,
    GoalCheckRow,
    JournalEntryRow,
    JournalRow,
    UsageRow,
)
from chaosproxy.scoring.rundir import RunData, TruncatedLine, iter_call_rows, iter_calls
from chaosproxy.types import DrawKey, Journal, JournalEntry

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real grid: two scripted agents, λ0.3 and FIT v2 incidents, five travel tasks."""
    out = tmp_path_factory.mktemp("real") / "run"
    command = [
        *(str(BIN / "chaosproxy"), "run", "--agent", "naive", "--agent", "retry"),
        *("--profile", "lambda0.3", "--profile", "fit-v2", "--tasks", "travel-0[1-5]*"),
        *("--concurrency", "8", "--no-score", "--out", str(out)),
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    return out


def _outputs(path: Path, reference: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """results.json and episodes.csv as `chaosproxy score` writes them, read the fast way or
    through the pydantic records."""
    with monkeypatch.context() as patch:
        if reference:

            def pydantic_calls(
                run: Path, truncated: list[TruncatedLine], attempts: dict[str, str]
            ) -> Iterator[CallRecord]:
                return iter_calls(run, truncated)

            def pydantic_episodes(
                file: Path, truncated: list[TruncatedLine]
            ) -> Iterator[EpisodeRecord]:
                return rundir.read_records(file, EpisodeRecord, truncated)

            def pydantic_journal(run: RunData, episode: str) -> Journal | None:
                file = run.journal_path(episode)
                if not file.is_file():
                    return None
                journal = Journal.model_validate_json(file.read_bytes())
                wanted = run.attempts.get(episode)
                if wanted is not None and journal.attempt not in (None, wanted):
                    return None
                return journal

            patch.setattr(api, "iter_call_rows", pydantic_calls)
            patch.setattr(rundir, "read_episode_rows", pydantic_episodes)
            patch.setattr(episodes, "load_journal", pydantic_journal)
        scored = score_runs([path])
    results, csv = write_outputs(scored, path)
    return results.read_text(encoding="utf-8"), csv.read_text(encoding="utf-8")


def _rewrite(path: Path, name: str, change: Any) -> None:
    lines = (path / name).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    text = "".join(change(i, record) for i, record in enumerate(records))
    (path / name).write_text(text, encoding="utf-8")


def _same(path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    fast = _outputs(path, False, monkeypatch)
    reference = _outputs(path, True, monkeypatch)
    assert fast[0] == reference[0]
    assert fast[1] == reference[1]
    return fast[0]


def test_real_run_scores_the_same_both_ways(
    real_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = json.loads(_same(real_run, monkeypatch))
    # the run exercised what the fast path must get right: faults, incidents, recoveries
    assert results["counts"]["total"] == 20
    lines = (real_run / CALLS_FILE).read_text(encoding="utf-8")
    assert '"fresh":false' in lines and '"incident":' in lines
    assert any(g["recovery"] for g in results["groups"])


def test_older_run_directory_scores_the_same_both_ways(
    real_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No attempts, no `fresh` marks, no `also`: a run directory from before those fields."""
    old = tmp_path / "run"
    subprocess.run(["cp", "-r", str(real_run), str(old)], check=True)

    def strip_call(_: int, record: dict[str, Any]) -> str:
        record.pop("attempt", None)
        record.pop("episode_restarted", None)
        if record.get("fault"):
            record["fault"].pop("fresh", None)
            record["fault"].pop("also", None)
        return json.dumps(record) + "\n"

    def strip_episode(_: int, record: dict[str, Any]) -> str:
        record.pop("attempt", None)
        return json.dumps(record) + "\n"

    _rewrite(old, CALLS_FILE, strip_call)
    _rewrite(old, EPISODES_FILE, strip_episode)
    assert '"fresh"' not in (old / CALLS_FILE).read_text(encoding="utf-8")
    _same(old, monkeypatch)


def test_lines_only_pydantic_accepts_score_as_before(
    real_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Values msgspec's strict types refuse and pydantic's lax ones coerce (an integral
    float for an int, a numeric string, "true" for a bool), and a torn last line."""
    odd = tmp_path / "run"
    subprocess.run(["cp", "-r", str(real_run), str(odd)], check=True)

    def loosen(i: int, record: dict[str, Any]) -> str:
        if i % 3 == 0:
            record["status"] = float(record["status"])
        if i % 5 == 0 and record.get("step") is not None:
            record["step"] = str(record["step"])
        if record.get("fault") and record["fault"].get("fresh") is not None:
            record["fault"]["fresh"] = "true" if record["fault"]["fresh"] else "false"
        return json.dumps(record) + "\n"

    def loosen_episode(i: int, record: dict[str, Any]) -> str:
        if i % 2 == 0:
            record["trial"] = float(record["trial"])
        if i % 3 == 0 and record.get("success") is not None:
            record["success"] = "true" if record["success"] else "false"
        return json.dumps(record) + "\n"

    _rewrite(odd, CALLS_FILE, loosen)
    _rewrite(odd, EPISODES_FILE, loosen_episode)
    journals = sorted((odd / EPISODE_DIR).glob(f"*/{JOURNAL_FILE}"))
    for file in journals[::2]:
        journal = json.loads(file.read_text(encoding="utf-8"))
        for entry in journal["entries"]:
            entry["seq"] = float(entry["seq"])
        file.write_text(json.dumps(journal), encoding="utf-8")
    with (odd / CALLS_FILE).open("a", encoding="utf-8") as log:
        log.write('{"ts": 1.0, "run_seed": 7, "episo')
    results = json.loads(_same(odd, monkeypatch))
    assert results["runs"][0]["truncated"][0]["file"] == CALLS_FILE
    assert all(type(row.trial) is int for row in rundir.load_run(odd).episodes)
    rows = list(iter_call_rows(odd))
    assert any(r.fault is not None and r.fault.fresh is False for r in rows)


def test_a_bad_episode_line_or_journal_is_reported_as_before(
    real_run: Path, tmp_path: Path
) -> None:
    """What msgspec refuses and pydantic refuses too names file, line and field."""
    bad = tmp_path / "run"
    subprocess.run(["cp", "-r", str(real_run), str(bad)], check=True)

    def break_second(i: int, record: dict[str, Any]) -> str:
        if i == 1:
            record["trial"] = "first"
        return json.dumps(record) + "\n"

    _rewrite(bad, EPISODES_FILE, break_second)
    with pytest.raises(RunDirError, match=r"episodes.jsonl:2: field 'trial': Input should be"):
        rundir.load_run(bad)
    run = rundir.load_run(real_run)
    folder = tmp_path / "j" / EPISODE_DIR / "e1"
    folder.mkdir(parents=True)
    journal = {"episode": "e1", "domain": "d", "entries": [{"seq": 1, "step": 1, "tool": "t"}]}
    journal["entries"][0]["arguments"] = []
    (folder / JOURNAL_FILE).write_text(json.dumps(journal), encoding="utf-8")
    only = RunData(path=tmp_path / "j", config=run.config, tasks={}, episodes=[])
    with pytest.raises(RunDirError, match=r"field 'entries.0.arguments': Input should be"):
        rundir.load_journal(only, "e1")
    journal["entries"][0]["arguments"] = {"a": 1}
    journal["entries"][0]["seq"] = 1.0  # pydantic's lax int: read as before
    (folder / JOURNAL_FILE).write_text(json.dumps(journal), encoding="utf-8")
    read = rundir.load_journal(only, "e1")
    assert read is not None and read.entries[0].seq == 1 and type(read.entries[0].seq) is int


def test_episode_structs_mirror_the_records() -> None:
    """episoderows' structs have records.py's / types.py's fields, in name and default."""
    values = {
        **dict.fromkeys(("episode", "episode_key", "task_id", "domain", "profile"), "x"),
        **dict.fromkeys(("agent", "task_text", "tool"), "x"),
        **dict(epsilon=0.0, trial=1, seed=7, started_at=1.0, duration_s=1.0, seq=1),
        **dict(transport="rest", outcome="completed", step=1, holds=True, arguments={}),
    }
    pairs: list[tuple[Any, Any]] = [
        (EpisodeRecord, EpisodeRow),
        (GoalCheck, GoalCheckRow),
        (TokenUsage, UsageRow),
        (Journal, JournalRow),
        (JournalEntry, JournalEntryRow),
    ]
    for model, struct in pairs:
        assert set(struct.__struct_fields__) == set(model.model_fields), struct
        needed = {n: values[n] for n, info in model.model_fields.items() if info.is_required()}
        required = struct.__struct_fields__[: -len(struct.__struct_defaults__) or None]
        assert set(required) == set(needed), struct
        made = struct(**needed)
        for name, info in model.model_fields.items():
            if not info.is_required():
                default = info.get_default(call_default_factory=True)
                assert getattr(made, name) == default, (struct, name)


def test_structs_mirror_the_records() -> None:
    """callrows' structs have records.py's fields, in name and default (add a field to a
    record and the struct must follow, or the fast path would read it as absent)."""
    for model, struct in ((CallRecord, CallRow), (FaultRecord, FaultRow), (DrawKey, DrawRow)):
        assert set(struct.__struct_fields__) == set(model.model_fields), struct
        required = struct.__struct_fields__[: -len(struct.__struct_defaults__) or None]
        assert set(required) == set(_required(model)), struct
        made = struct(**_required(model))
        for name, info in model.model_fields.items():
            if not info.is_required():
                assert getattr(made, name) == info.get_default(call_default_factory=True), name


def _required(model: Any) -> dict[str, Any]:
    values = {
        "ts": 1.0,
        "run_seed": 7,
        "episode": "e",
        "episode_key": "k",
        "step": 1,
        "domain": "d",
        "tool": "t",
        "transport": "rest",
        "kind": "tool_call",
        "method": "POST",
        "path": "/",
        "status": 200,
        "latency_ms": 1.0,
        "name": "ServerError",
        "stage": "before",
        "recoverable": True,
        "seed": 7,
        "position": 1,
        "purpose": "fault",
    }
    return {name: values[name] for name, info in model.model_fields.items() if info.is_required()}


def test_shared_empty_containers_stay_empty(real_run: Path) -> None:
    """An episode's empty counters and lists are shared (scoring.calls.NO_*) until the fold
    gives it its own: scoring a real run with faults, incidents and violations writes to
    none of them."""
    scored = score_runs([real_run])
    assert any(s.faults for s in scored.episodes)
    assert any(s.faults == [] for s in scored.episodes)
    shared = [calls.NO_COUNTS, calls.NO_HITS, calls.NO_STEPS, calls.NO_WAITS, calls.NO_WATCH]
    assert all(len(empty) == 0 for empty in [*shared, calls.NO_TRACKS, calls.NO_KEYS])
    assert all(steps is calls.NO_STEPS for steps in calls.NO_VIOLATIONS.values())
    assert set(calls.NO_VIOLATIONS) < set(quality.RULES)
