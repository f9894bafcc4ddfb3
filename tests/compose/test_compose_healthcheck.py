"""A healthcheck that outlasts its timeout (a loaded machine) is one failed try, not an error."""

from __future__ import annotations

from pathlib import Path

import compose_file
import pytest
from compose_file import LocalCompose

TOKENS = {"CHAOSPROXY_ORACLE_TOKEN": "oracle-secret"}


def test_a_healthcheck_timeout_counts_as_unhealthy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose = LocalCompose(runs=tmp_path, env=TOKENS)
    slow = ["CMD", "python", "-c", "import time; time.sleep(30)"]
    compose.data["services"]["travel"]["healthcheck"]["test"] = slow
    monkeypatch.setattr(compose_file, "HEALTHCHECK_TIMEOUT", 0.5)
    assert compose.healthy("travel") is False


def test_a_passing_healthcheck_counts_as_healthy(tmp_path: Path) -> None:
    compose = LocalCompose(runs=tmp_path, env=TOKENS)
    compose.data["services"]["travel"]["healthcheck"]["test"] = ["CMD", "python", "-c", "pass"]
    assert compose.healthy("travel") is True
