"""`chaosproxy.Environment(...)` refuses a bad argument at construction with a SetupError
that names the argument, instead of a bare TypeError/AttributeError later (or, for an
empty host, silently binding every interface)."""

from __future__ import annotations

from typing import Any

import pytest

import chaosproxy
from chaosproxy.api.errors import SetupError
from chaosproxy.pacing import RatePacer


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"domains": 123}, "domains:"),
        ({"domains": ["travel", 5]}, "domains:"),
        ({"domains": ["travel"], "upstreams": "http://127.0.0.1:1"}, "upstreams:"),
        ({"domains": ["travel"], "services": ["travel"]}, "services:"),
        ({"domains": ["travel"], "openapi": "spec.yaml"}, "openapi:"),
        ({"domains": ["travel"], "host": ""}, "host:"),
        ({"domains": ["travel"], "host": None}, "host:"),
        ({"domains": ["travel"], "run_dir": 123}, "run_dir:"),
        ({"domains": ["travel"], "upstream_ca": 5}, "upstream_ca:"),
        ({"domains": ["travel"], "model_pacer": object()}, "model_pacer:"),
    ],
)
def test_bad_argument_is_named(arguments: dict[str, Any], named: str) -> None:
    with pytest.raises(SetupError) as refused:
        chaosproxy.Environment(**arguments)
    assert str(refused.value).startswith(named)


def test_good_arguments_still_accepted() -> None:
    env = chaosproxy.Environment(
        domains=("travel",), host="127.0.0.1", model_pacer=RatePacer(rpm=60)
    )
    assert env.settings.domains == ["travel"]
    assert env.settings.host == "127.0.0.1"
