"""Issue 26, smaller: bad input files get a clear error naming the file and the reason,
fast, never a traceback and never a wait (a FIFO is not opened)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from chaosproxy.cli import main

FAST_S = 10.0
"""Generous on a loaded 2-core machine; before the fix, some of these took over 60 s."""


def check(path: Path) -> tuple[int, str, float]:
    started = time.monotonic()
    result = CliRunner().invoke(main, ["profiles", "check", str(path)])
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.output, time.monotonic() - started


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"name: x\ndescription: caf\xe9\n", "not UTF-8 text (byte 0xe9 at offset 24)"),
        (b"name: x\nfailure_rate: 0.1\nfailure_rate: 0.9\n", "key 'failure_rate' is given twice"),
        (b"name: x\nscope: " + b"[" * 10_000 + b"]" * 10_000 + b"\n", "nest"),
        (
            b"name: x\nhints:\n  a:\n    " + b"- " * 10_000 + b"v\n",
            "nested more than 64 levels deep",
        ),
    ],
    ids=["not-utf8", "duplicate-key", "deep-flow", "deep-block"],
)
def test_bad_profile_text_is_named_and_refused_fast(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    code, output, took = check(path)
    assert code == 2 and str(path) in output and reason in output, output
    assert took < FAST_S


def test_a_150_mb_profile_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:
        handle.truncate(150 * 1024 * 1024)  # sparse: no disk used
    code, output, took = check(path)
    assert code == 2 and "157286400 bytes; a profile file is at most 1048576" in output
    assert took < FAST_S


def test_a_directory_or_fifo_is_not_a_missing_file(tmp_path: Path) -> None:
    folder = tmp_path / "dir.yaml"
    folder.mkdir()
    code, output, _ = check(folder)
    assert code == 2 and f"{folder}: is a directory, not a profile file" in output
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    code, output, took = check(fifo)  # opening it would wait for a writer forever
    assert code == 2 and f"{fifo}: is a FIFO (named pipe), not a profile file" in output
    assert took < FAST_S


def test_run_out_pointing_at_a_file_is_a_usage_error(tmp_path: Path) -> None:
    target = tmp_path / "afile"
    target.write_text("x")
    result = CliRunner().invoke(
        main, ["run", "--agent", "naive", "--out", str(target), "--no-score"]
    )
    assert result.exit_code == 2 and not isinstance(result.exception, FileExistsError)
    assert "afile" in result.output and "is a file" in result.output


def test_a_10000_block_grid_is_refused_fast(tmp_path: Path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text(
        "blocks:\n"
        + "".join(
            f"  - {{name: b{i}, agents: [a], profiles: [lambda0.0]}}\n" for i in range(10_000)
        )
    )
    # CPU time of this process (the command runs in it): the work done before refusing,
    # which the machine's load does not stretch as it stretches the wall clock
    started = time.process_time()
    result = CliRunner().invoke(main, ["run", "--grid", str(path), "--no-score"])
    assert result.exit_code == 2, result.output
    assert f"{path}: 10000 blocks; a grid file has at most 256" in result.output
    assert time.process_time() - started < FAST_S


def test_a_grid_with_a_duplicate_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("blocks:\n  - name: a\n    agents: [x]\n    agents: [y]\n    profiles: [p]\n")
    result = CliRunner().invoke(main, ["run", "--grid", str(path), "--no-score"])
    assert result.exit_code == 2 and "key 'agents' is given twice" in result.output
