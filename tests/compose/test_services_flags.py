"""`--services` maps and the errors of a run against an environment that is not there."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from chaosproxy.compose.remote import copy_calls
from chaosproxy.compose.services import ServicesError, parse_services

CLI = "from chaosproxy.cli import main; main()"


def test_services_parse_as_comma_lists_of_known_domains() -> None:
    assert parse_services(("travel=http://travel:8808,support=http://s:1/",)) == {
        "travel": "http://travel:8808",
        "support": "http://s:1",
    }
    with pytest.raises(ServicesError, match="expected DOMAIN=URL"):
        parse_services("travel")
    with pytest.raises(ServicesError, match="nosuch"):
        parse_services("nosuch=http://x:1")
    with pytest.raises(ServicesError, match="given twice"):
        parse_services(["travel=http://a:1", "travel=http://b:2"])


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_run_against_no_environment_says_what_is_missing(tmp_path: Path) -> None:
    port = closed_port()
    done = subprocess.run(
        [
            sys.executable, "-c", CLI, "run", "--agent", "naive", "--domains", "travel",
            "--tasks", "travel-01-*", "--profile", "lambda0.0",
            "--services", f"travel=http://127.0.0.1:{port}",
            "--proxy", f"http://127.0.0.1:{port}", "--control", f"http://127.0.0.1:{port}",
            "--out", str(tmp_path / "run"), "--no-score",
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert f"the control API http://127.0.0.1:{port} is not up" in done.stderr


def test_run_needs_a_service_url_for_every_task_domain(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable, "-c", CLI, "run", "--agent", "naive", "--domains", "travel",
            "--tasks", "travel-01-*", "--services", "support=http://127.0.0.1:1",
            "--out", str(tmp_path / "run"), "--no-score",
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "--services has no URL for travel" in done.stderr


def test_up_refuses_an_unknown_service_domain(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CLI, "up", "--services", "nosuch=http://x:1",
         "--run-dir", str(tmp_path / "r")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--services" in done.stderr and "nosuch" in done.stderr


def test_copy_calls_takes_only_the_runs_episodes_since_it_started(tmp_path: Path) -> None:
    log = tmp_path / "proxy.jsonl"
    lines = [
        {"episode": "a", "ts": 10.0},
        {"episode": "b", "ts": 11.0},
        {"episode": "a", "ts": 5.0},
        {"episode": "c", "ts": 12.0},
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json\n")
    out = tmp_path / "run"
    out.mkdir()
    assert copy_calls(log, {"a", "c"}, out, since=9.0) == 2
    copied = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    assert copied == [lines[0], lines[3]]
