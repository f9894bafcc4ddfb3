"""`RUN_DIR/control.json`: where the control API listens and its token, for the operator only.

`chaosproxy up` writes it with mode 0600; out-of-process tools (a runner or a CLI pointed
at a running proxy) read it with `read_control_file`. In-process users hold the
`Environment` and need no file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

CONTROL_FILE = "control.json"


@dataclass(frozen=True)
class ControlAccess:
    url: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def write_control_file(run_dir: Path, access: ControlAccess) -> Path:
    """Create the file readable by its owner only (0600 from the start, never wider)."""
    path = run_dir / CONTROL_FILE
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump({"url": access.url, "token": access.token}, handle)
        handle.write("\n")
    return path


def read_control_file(run_dir: Path) -> ControlAccess:
    """The control URL and token of the proxy that writes its log to `run_dir`."""
    path = run_dir / CONTROL_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return ControlAccess(url=str(data["url"]), token=str(data["token"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"{path}: cannot read the control API's address and token ({exc})"
        ) from exc
