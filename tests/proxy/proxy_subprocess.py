"""`chaosproxy up` as a subprocess, for tests that need a real separate proxy process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

CLI = "from chaosproxy.cli import main; main()"


def start_up(args: list[str], run_dir: Path) -> tuple[subprocess.Popen[str], str]:
    """Start `chaosproxy up --port 0`; returns the process and the proxy URL it printed."""
    process = subprocess.Popen(
        [sys.executable, "-c", CLI, "up", "--port", "0", "--run-dir", str(run_dir), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.match(r"chaosproxy (http://127\.0\.0\.1:\d+)", line)
    if match is None:
        process.kill()
        stderr = process.stderr.read() if process.stderr else ""
        raise AssertionError(f"unexpected first line {line!r}; stderr: {stderr}")
    return process, match.group(1)
