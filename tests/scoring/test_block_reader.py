"""calls.jsonl is decoded a block of lines at a time (rundir._decoded_blocks); every line must
still read as the line-by-line reader (pydantic's `iter_calls`) reads it: the same records,
blank lines skipped, and a bad line reported with the same file, line and message, wherever
the block boundaries fall."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaosproxy.records import CALLS_FILE, RunDirError
from chaosproxy.scoring import rundir, score_runs
from chaosproxy.scoring.csvout import COLUMNS, row
from chaosproxy.scoring.rundir import TruncatedLine, iter_call_rows, iter_calls
from chaosproxy.scoring.synthetic import write_synthetic_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("blocks") / "run"
    write_synthetic_run(path, calls=400, tasks=4, trials=2)
    return path


def _lines(run: Path) -> list[str]:
    return (run / CALLS_FILE).read_text(encoding="utf-8").splitlines(keepends=True)


def _keys(calls: object) -> list[tuple[object, ...]]:
    return [(c.episode, c.ts, c.step, c.status, c.tool) for c in calls]  # type: ignore[attr-defined]


def _error(read: object) -> str:
    with pytest.raises(RunDirError) as caught:
        list(read)  # type: ignore[call-overload]
    return str(caught.value)


@pytest.mark.parametrize("block", [64, 1000, 1 << 22])
def test_blocks_read_every_record_as_the_line_reader(
    run: Path, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Block sizes smaller than a line, a few lines, and the whole file."""
    monkeypatch.setattr(rundir, "BLOCK_BYTES", block)
    reference = _keys(iter_calls(run))
    assert len(reference) == len(_lines(run)) > 300
    assert _keys(iter_call_rows(run)) == reference


@pytest.mark.parametrize(
    "change",
    ["two_on_one_line", "split_over_two", "bad_type", "not_json", "blank", "torn_last"],
)
def test_odd_lines_read_as_the_line_reader(
    run: Path, tmp_path: Path, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """msgspec's `decode_lines` would accept two records on one line, or one split over two;
    the block reader must report them at their line, as before."""
    monkeypatch.setattr(rundir, "BLOCK_BYTES", 1000)
    odd = tmp_path / "run"
    odd.mkdir()
    lines = _lines(run)
    at = 150
    if change == "two_on_one_line":
        lines[at] = lines[at].rstrip("\n") + " " + lines[at + 1]
        del lines[at + 1]
    elif change == "split_over_two":
        text = lines[at]
        cut = text.index('"episode"')
        lines[at : at + 1] = [text[:cut] + "\n", text[cut:]]
    elif change == "bad_type":
        record = json.loads(lines[at])
        record["status"] = "two hundred"
        lines[at] = json.dumps(record) + "\n"
    elif change == "not_json":
        lines[at] = lines[at].replace('"', "'", 3)
    elif change == "blank":
        lines[at:at] = ["\n", "   \n"]
    else:
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
    (odd / CALLS_FILE).write_text("".join(lines), encoding="utf-8")
    if change in ("blank", "torn_last"):
        cut_fast: list[TruncatedLine] = []
        cut_reference: list[TruncatedLine] = []
        fast = _keys(iter_call_rows(odd, cut_fast))
        assert fast == _keys(iter_calls(odd, cut_reference))
        assert cut_fast == cut_reference
        assert len(fast) == len(_lines(run)) - (change == "torn_last")
        assert (change == "torn_last") == bool(cut_fast)
        return
    message = _error(iter_call_rows(odd))
    assert message == _error(iter_calls(odd))
    assert f"{CALLS_FILE}:{at + 1}:" in message


def test_episodes_csv_rows_have_every_column(run: Path) -> None:
    """csvout.row writes cells by position: one per column, in COLUMNS order."""
    scored = score_runs([run])
    for score in scored.episodes:
        cells = row(score)
        assert len(cells) == len(COLUMNS)
        named = dict(zip(COLUMNS, cells, strict=True))
        assert named["episode"] == score.record.episode
        assert named["agent_outcome"] == (score.agent_outcome or "")
        assert named["faults_delivered"] == len(score.faults)
