"""The toy domain served on a real 127.0.0.1 port, once per test module."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from chaosproxy.domains.kit.testing import serve_app
from kit_toy import domain


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve_app(domain.asgi_app()) as url:
        yield url


@pytest.fixture
def episode() -> str:
    """A fresh episode id per test, so tests sharing a server never share state."""
    return f"ep-{uuid.uuid4().hex[:10]}"
