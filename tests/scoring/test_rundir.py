"""Reading run directories: torn lines, bad lines, provenance, outputs, t_success re-check."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from chaosproxy.domains.kit.journal import Journal

from chaosproxy.records import CALLS_FILE, EPISODES_FILE, RunDirError
from chaosproxy.scoring import score_runs, write_outputs
from chaosproxy.scoring.tsuccess import UnknownStep, VerifierCache, first_goal_step, recheck


def _two_episodes(run: Any) -> Path:
    run.episode(t_success=2).call().call(status=503, fault="ServerError").call()
    run.episode(success=False).call()
    return run.build()


def test_torn_last_line_is_skipped(run: Any, score: Any, group: Any) -> None:
    path = _two_episodes(run)
    with (path / CALLS_FILE).open("a", encoding="utf-8") as handle:
        handle.write('{"ts": 1.0, "episode": "ep000", "st')
    g = group(score(path).results)
    assert g.fault_episodes == 1 and g.frr.value == 1.0


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


def _journal(states: list[tuple[int | None, bool]], initial_done: bool = False) -> Journal:
    return Journal.model_validate(
        {
            "episode": "e",
            "domain": "travel",
            "initial_state": {"done": initial_done},
            "entries": [
                {
                    "seq": i + 1,
                    "step": step,
                    "tool": "w",
                    "arguments": {},
                    "result": None,
                    "state_after": {"done": done},
                    "transport": "rest",
                }
                for i, (step, done) in enumerate(states)
            ],
            "final_state": {"done": states[-1][1] if states else initial_done},
        }
    )


def _fake_verify(s0: dict[str, Any], sf: dict[str, Any]) -> bool:
    return bool(sf.get("done"))


@pytest.mark.parametrize(
    ("states", "initial", "expected"),
    [
        ([(2, False), (5, True), (7, True)], False, 5),
        ([(2, False), (4, False)], False, None),
        ([(3, True)], True, 0),
        ([(3, True), (4, False), (6, True)], False, 3),
    ],
)
def test_first_goal_step(
    states: list[tuple[int | None, bool]], initial: bool, expected: int | None
) -> None:
    assert first_goal_step(_journal(states, initial), _fake_verify) == expected


def test_goal_after_an_unstepped_entry_falls_back_to_the_record() -> None:
    journal = _journal([(None, True)])
    with pytest.raises(UnknownStep):
        first_goal_step(journal, _fake_verify)
    assert recheck(journal, _fake_verify, 9) == (9, "record")
    assert recheck(None, _fake_verify, 9) == (9, "record")
    assert recheck(_journal([(4, True)]), _fake_verify, 9) == (4, "journal")


def test_scorer_recomputes_t_success_with_the_verifier(run: Any, group: Any) -> None:
    # the record says t_success 9; the journal shows the goal held after step 3
    (
        run.episode(t_success=9)
        .call()
        .call(status=503, fault="ServerError")
        .call("w")
        .write("w", {}, 3, {"done": True})
    )
    path = run.build()
    used: list[tuple[str, str]] = []

    def loader(domain: str, task: str) -> Any:
        used.append((domain, task))
        return _fake_verify

    results = score_runs([path], verifiers=VerifierCache(loader)).results
    g = group(results)
    assert used == [("travel", "t1")]
    assert g.t_success_from_journal == 1
    assert g.frr.value == 1.0  # 3 − 2 ≤ 2; with the record's 9 it would be 0.5


def test_a_crashing_verifier_falls_back_to_the_recorded_step() -> None:
    def broken(s0: dict[str, Any], sf: dict[str, Any]) -> bool:
        raise KeyError("bookings")

    assert recheck(_journal([(4, True)]), broken, 7) == (7, "record")


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
