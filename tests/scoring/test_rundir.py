"""Reading run directories: torn lines, bad lines, provenance, outputs, t_success re-check."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from chaosproxy.records import CALLS_FILE, EPISODES_FILE, RunDirError
from chaosproxy.scoring import score_runs, write_outputs
from chaosproxy.scoring.tsuccess import t_success_of


def _two_episodes(run: Any) -> Path:
    run.episode(t_success=3).call().call(status=503, fault="ServerError").call()
    run.episode(success=False).call()
    return run.build()


@pytest.mark.parametrize("name", [CALLS_FILE, EPISODES_FILE])
def test_torn_last_line_is_skipped_with_a_warning_and_recorded(
    run: Any, score: Any, group: Any, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A crash leaves a last line with no newline: every whole record before it still
    counts, and the scorer says what it skipped (log warning and results.json)."""
    path = _two_episodes(run)
    torn = '{"ts": 1.0, "episode": "ep000", "st'
    with (path / name).open("a", encoding="utf-8") as handle:
        handle.write(torn)
    lines_before = len((path / name).read_text().splitlines()) - 1
    with caplog.at_level("WARNING", logger="chaosproxy.scoring"):
        scored = score(path)
    g = group(scored.results)
    assert g.fault_episodes == 1 and g.frr.value == 1.0 and g.counts.total == 2
    cut = scored.results.runs[0].truncated
    assert [(c.file, c.line, c.bytes) for c in cut] == [(name, lines_before + 1, len(torn))]
    assert len(scored.results.warnings) == 1 and name in scored.results.warnings[0]
    assert any(name in r.getMessage() and "truncated" in r.getMessage() for r in caplog.records)
    written, _ = write_outputs(scored, path)
    assert json.loads(written.read_text())["runs"][0]["truncated"][0]["file"] == name


def test_whole_files_report_no_truncation(run: Any, score: Any) -> None:
    results = score(_two_episodes(run)).results
    assert results.runs[0].truncated == [] and results.warnings == []


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json\n", "calls.jsonl:2: not valid JSON"),
        ('{"ts": "yesterday"}\n', "calls.jsonl:2: field 'ts'"),
    ],
)
def test_bad_line_names_file_and_line(run: Any, score: Any, line: str, message: str) -> None:
    path = _two_episodes(run)
    calls = (path / CALLS_FILE).read_text().splitlines(keepends=True)
    (path / CALLS_FILE).write_text(calls[0] + line + "".join(calls[1:]))
    with pytest.raises(RunDirError, match=message):
        score(path)


@pytest.mark.parametrize("name", [CALLS_FILE, EPISODES_FILE])
def test_line_cut_mid_file_is_placed_on_its_own_line(run: Any, score: Any, name: str) -> None:
    """A line cut inside a string, with lines after it: the error names the file's line and
    a column in it, not the parser's "line 2 column 0" (the newline it read past)."""
    path = _two_episodes(run)
    lines = (path / name).read_text().splitlines(keepends=True)
    (path / name).write_text(lines[0][:30] + "\n" + "".join(lines[1:]))
    with pytest.raises(RunDirError) as refused:
        score(path)
    message = str(refused.value)
    assert f"{name}:1: not valid JSON" in message
    assert "column " in message and "line 2" not in message


def test_bad_episode_record_names_the_field(run: Any, score: Any) -> None:
    path = _two_episodes(run)
    with (path / EPISODES_FILE).open("a") as handle:
        handle.write(json.dumps({"episode": "x", "outcome": "exploded"}) + "\n")
    with pytest.raises(RunDirError, match=r"episodes.jsonl:3: field"):
        score(path)


def test_not_a_run_directory(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="missing"):
        score_runs([tmp_path])


def test_resumed_episode_counts_once(run: Any, score: Any, group: Any) -> None:
    path = _two_episodes(run)
    lines = (path / EPISODES_FILE).read_text().splitlines(keepends=True)
    (path / EPISODES_FILE).write_text("".join(lines) + lines[1])
    results = score(path).results
    assert results.counts.total == 2 and results.runs[0].duplicate_records == 1


def test_outputs_results_json_and_csv(run: Any, score: Any) -> None:
    path = _two_episodes(run)
    run_outcome = run.episode(outcome="agent_crash")
    assert run_outcome.record.outcome == "agent_crash"
    path = run.build()
    scored = score(path)
    results_path, csv_path = write_outputs(scored, path)
    data = json.loads(results_path.read_text())
    digests = {p["name"]: p["sha256"] for p in data["runs"][0]["provenance"]}
    assert digests["calls.jsonl"] == hashlib.sha256((path / CALLS_FILE).read_bytes()).hexdigest()
    assert set(digests) >= {"config.json", "tasks.jsonl", "episodes.jsonl", "calls.jsonl"}
    group = data["groups"][0]
    assert group["counts"] == {
        "total": 3,
        "evaluable": 2,
        "completed": 2,
        "agent_crash": 1,
        "timeout": 0,
        "infra_error": 0,
        "no_verdict": 0,
        "agent_crash_after_fault": 0,
        "timeout_after_fault": 0,
        "infra_error_agent_caused": 0,
        "reclassified": {},
    }
    assert group["pass_k"][3]["pass_hat"]["value"] is None  # k = 4 > n: JSON null, not 0
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == 3
    assert [r["outcome"] for r in rows] == ["completed", "completed", "agent_crash"]
    assert rows[0]["t_f"] == "2" and rows[0]["frr"] == "1" and rows[1]["frr"] == ""
    assert rows[2]["evaluable"] == "false"


def test_rescoring_is_reproducible(run: Any, score: Any) -> None:
    path = _two_episodes(run)
    assert score(path).results == score(path).results


@pytest.mark.parametrize(
    ("checks", "initial", "recorded", "expected"),
    [
        # the verifier's verdict after each state-changing step, as the runner records it
        ([(2, False), (5, True), (7, True)], False, 5, (5, "verdicts")),
        ([(2, False), (4, False)], False, None, (None, "verdicts")),
        ([(3, True)], True, 3, (0, "verdicts")),  # held before any call
        ([(3, True), (4, False), (6, True)], False, 3, (3, "verdicts")),
        ([(None, True)], False, 9, (9, "record")),  # held after an unnumbered call
        (None, None, 9, (9, "record")),  # an older run directory: no verdicts recorded
    ],
)
def test_t_success_from_recorded_verdicts(
    run: Any,
    checks: list[tuple[int | None, bool]] | None,
    initial: bool | None,
    recorded: int | None,
    expected: tuple[int | None, str],
) -> None:
    record = run.episode(t_success=recorded, checks=checks, held_initially=initial).record
    assert t_success_of(record) == expected


def test_scorer_uses_the_recorded_verdicts(run: Any, score: Any, group: Any) -> None:
    # the record says t_success 9; the recorded checks show the goal held after step 3
    (
        run.episode(t_success=9, checks=[(3, True)], held_initially=False)
        .call()
        .call(status=503, fault="ServerError")
        .call("w")
    )
    g = group(score(run.build()).results)
    assert g.t_success_from_journal == 1
    assert g.frr.value == 1.0  # 3 − 2 ≤ 2; with the record's 9 it would be 0.5


def test_results_do_not_depend_on_the_order_episodes_finished(tmp_path: Path) -> None:
    """Two runs that differ only in completion order score identically, intervals included."""
    from chaosproxy.scoring import score_runs
    from chaosproxy.scoring.synthetic import write_synthetic_run

    first = tmp_path / "a" / "run"
    write_synthetic_run(first, calls=3000)
    second = tmp_path / "b" / "run"
    second.mkdir(parents=True)
    for entry in first.iterdir():
        if entry.is_file():
            lines = entry.read_text().splitlines(keepends=True)
            if entry.name == "episodes.jsonl":
                lines = lines[::-1]
            (second / entry.name).write_text("".join(lines))
    a = score_runs([first]).results.model_dump(mode="json")
    b = score_runs([second]).results.model_dump(mode="json")
    assert a["groups"] == b["groups"]
    assert a["comparisons"] == b["comparisons"]
