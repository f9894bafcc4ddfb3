"""Serve registered domains on real 127.0.0.1 ports: one server per domain per test module."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from chaosproxy.domains.kit.testing import serve_app
from chaosproxy.domains.registry import get_domain


@pytest.fixture(scope="module")
def domain_url() -> Iterator[Callable[[str], str]]:
    """`domain_url("travel")` -> base URL of that domain, started on first use in the module."""
    urls: dict[str, str] = {}
    with ExitStack() as stack:

        def url_of(name: str) -> str:
            if name not in urls:
                urls[name] = stack.enter_context(serve_app(get_domain(name).asgi_app()))
            return urls[name]

        yield url_of
