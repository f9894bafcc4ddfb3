"""Fixtures: a real HTTPS travel service with its own CA, and `up` in forward mode before it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from chaosproxy.domains.registry import get_domain

from chaosproxy.forward.mitmenv import MitmEnvError, find_mitmdump

sys.path.insert(0, str(Path(__file__).parent))

from forward_helpers import (
    HOST,
    Certs,
    Up,
    forward_args,
    make_certs,
    public_name,
    serve_https,
    start_up,
)


@pytest.fixture(scope="session")
def mitmdump() -> Path:
    """mitmproxy's own venv (scripts/install.sh creates it; created here if missing)."""
    try:
        return find_mitmdump(echo=print)
    except MitmEnvError as failure:
        pytest.fail(f"forward-mode tests need mitmproxy's venv: {failure}")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"), [HOST])


@pytest.fixture(scope="module")
def https_port(certs: Certs) -> Iterator[int]:
    with serve_https(public_name(get_domain("travel").asgi_app(), HOST), certs) as port:
        yield port


@pytest.fixture(scope="module")
def forward_up(
    mitmdump: Path, certs: Certs, https_port: int, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Up]:
    up = start_up(forward_args(certs, https_port), tmp_path_factory.mktemp("run"))
    try:
        yield up
    finally:
        up.stop()
