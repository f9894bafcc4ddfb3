"""A bounded fuzz of every domain's OpenAPI document, straight at the service (issue 13).

schemathesis generates calls from each served document, valid ones (positive) and ones
that break the schema (negative); every reply must be below 500, and every 4xx must name
the field it refuses (`error.field` or `error.fields`). The default budget keeps the whole
file to a minute or two of CI; `CHAOSPROXY_FUZZ_EXAMPLES=2000` runs a long local mode.
Generation is derandomized, so a CI failure reproduces with the same command.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import schemathesis
from chaosproxy.domains.kit.testing import serve_app
from chaosproxy.domains.registry import all_domains
from hypothesis import HealthCheck, given, settings
from schemathesis import Case, GenerationMode

EXAMPLES = int(os.environ.get("CHAOSPROXY_FUZZ_EXAMPLES", "40"))
DOMAINS = {domain.name: domain for domain in all_domains()}
EPISODE = "fuzz"


@pytest.fixture(scope="module", params=sorted(DOMAINS))
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any]]:
    with serve_app(DOMAINS[request.param].asgi_app()) as url:
        document = requests.get(f"{url}/openapi.json", timeout=10).json()
        yield url, schemathesis.openapi.from_dict(document)


def problem(case: Case, response: requests.Response) -> str | None:
    """What is wrong with this reply, if anything."""
    where = f"{case.method} {case.path} body={json.dumps(case.body, default=str)[:300]}"
    if response.status_code >= 500:
        return f"{response.status_code} for {where}: {response.text[:300]}"
    if response.status_code >= 400:
        try:
            error = response.json()["error"]
        except (ValueError, KeyError, TypeError):
            return f"{response.status_code} without a JSON error body for {where}"
        if not (error.get("field") or error.get("fields")):
            return f"{response.status_code} names no field for {where}: {error}"
    return None


@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_5xx_and_every_4xx_names_the_field(
    served: tuple[str, Any], mode: GenerationMode
) -> None:
    url, schema = served
    found: list[str] = []
    session = requests.Session()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=schema.as_strategy(mode, headers={"X-Chaos-Episode": EPISODE}))
    def run(case: Case) -> None:
        response = case.call(base_url=url, session=session, timeout=30)
        wrong = problem(case, response)
        if wrong is not None and len(found) < 10:
            found.append(wrong)

    run()
    assert found == []
