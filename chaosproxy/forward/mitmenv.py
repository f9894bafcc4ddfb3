"""mitmproxy's own virtual environment: found, or created on first use, in the user's cache.

mitmproxy 11.0.2 (the newest for Python 3.11) pins h11 0.14 while fastmcp, mcp and httpx need
h11 >= 0.16, so mitmproxy cannot share chaosproxy's environment. It gets its own venv under
`$XDG_CACHE_HOME/chaosproxy/mitm-venv` (default `~/.cache/...`), created once with pip;
`scripts/install.sh` creates it ahead of time with `python -m chaosproxy.forward.mitmenv`.
`CHAOSPROXY_MITMDUMP` points at another `mitmdump` instead.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from chaosproxy.errors import ChaosError

MITMPROXY_REQUIREMENT = "mitmproxy>=11.0.2,<13"
READY_MARK = ".chaosproxy-ready"


class MitmEnvError(ChaosError, RuntimeError):
    """mitmproxy's environment could not be found or created; the message says why."""


def venv_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "chaosproxy" / "mitm-venv"


def _mitmdump_in(venv: Path) -> Path:
    return venv / ("Scripts/mitmdump.exe" if os.name == "nt" else "bin/mitmdump")


def find_mitmdump(*, create: bool = True, echo: Callable[[str], None] = lambda text: None) -> Path:
    """The `mitmdump` to run; creates the venv (saying so through `echo`) when missing."""
    override = os.environ.get("CHAOSPROXY_MITMDUMP")
    if override:
        path = Path(override)
        if not path.is_file():
            raise MitmEnvError(f"CHAOSPROXY_MITMDUMP={override}: no such file")
        return path
    venv = venv_dir()
    binary = _mitmdump_in(venv)
    if binary.is_file() and (venv / READY_MARK).is_file():
        return binary
    if not create:
        raise MitmEnvError(f"mitmproxy's environment is missing: {venv}")
    venv.parent.mkdir(parents=True, exist_ok=True)
    with (venv.parent / "mitm-venv.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.is_file() and (venv / READY_MARK).is_file():
            return binary
        echo(
            f"creating mitmproxy's own environment in {venv} "
            f"(pip install '{MITMPROXY_REQUIREMENT}'; once, about a minute)..."
        )
        _create(venv)
    echo("mitmproxy's environment is ready")
    return binary


def _create(venv: Path) -> None:
    steps = [
        [sys.executable, "-m", "venv", "--clear", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", MITMPROXY_REQUIREMENT],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise MitmEnvError(
                f"creating {venv} failed at `{' '.join(step)}`:\n{done.stderr.strip()[-2000:]}"
            )
    (venv / READY_MARK).write_text(MITMPROXY_REQUIREMENT + "\n", encoding="utf-8")


if __name__ == "__main__":
    try:
        print(find_mitmdump(echo=lambda text: print(text, file=sys.stderr)))
    except MitmEnvError as failure:
        sys.exit(str(failure))
