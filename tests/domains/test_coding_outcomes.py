"""Issue 26: what the agent's own sandbox output can do to the coding service.

Sandbox output that is not valid Unicode or is nested too deep is the snippet's result (or a
tool error), never a 500 that the runner would file as infrastructure. Through the real
server on 127.0.0.1, as the agent would call it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from chaosproxy.domains.coding.state import CodingState
from domain_driver import fresh_episode

pytestmark = pytest.mark.timeout(120)

DEEP = 200_000
DEEP_REPORT = (
    "import os\n"
    f"os.write(3, b'{{\"tests\": ' + b'[' * {DEEP} + b']' * {DEEP} + b'}}')\n"
    "os._exit(0)\n"
)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("print('\\ud800')", {"stdout": "\\ud800\n", "value": None}),
        (
            "import sys\nsys.stderr.write('a\\udfffb')\n'\\ud800x'",
            {"stderr": "a\\udfffb", "value": "'\\ud800x'"},
        ),
        ("'caf\\xe9 \\U0001f600'", {"stdout": "", "value": "'caf\xe9 \U0001f600'"}),
    ],
    ids=["print-lone-surrogate", "stderr-and-value", "valid-unicode-unchanged"],
)
async def test_output_that_is_not_unicode_is_the_snippets_result(
    domain_url: Callable[[str], str], code: str, expected: dict[str, Any]
) -> None:
    """The issue's '\\ud800': the service answered 500 and the runner dropped the episode."""
    async with fresh_episode(domain_url("coding"), CodingState, timeout=60) as episode:
        response = await episode.raw("code_interpreter", {"repo": "ledger", "code": code})
        assert response.status_code == 200, response.text
        result = json.loads(response.content.decode("utf-8"))
        assert result["status"] == "ok", result
        assert {key: result[key] for key in expected} == expected


async def test_a_report_nested_too_deep_is_the_snippets_crash(
    domain_url: Callable[[str], str],
) -> None:
    """A snippet that writes a report nested 200,000 deep on its report pipe and exits."""
    async with fresh_episode(domain_url("coding"), CodingState, timeout=60) as episode:
        response = await episode.raw("code_interpreter", {"repo": "ledger", "code": DEEP_REPORT})
        assert response.status_code == 200, response.text
        result = response.json()
        assert result["status"] == "crashed", result
        assert "malformed result" in result["error"]["message"]


async def test_a_test_report_nested_too_deep_fails_only_its_file(
    domain_url: Callable[[str], str],
) -> None:
    """The issue's RecursionError: a test file the agent wrote sends a report nested 200,000
    deep; test_runner answers, with that file's tests errored and the others run."""
    async with fresh_episode(domain_url("coding"), CodingState, timeout=60) as episode:
        await episode.ok(
            "write_file", repo="ledger", path="tests/test_deep.py", content=DEEP_REPORT
        )
        response = await episode.raw("test_runner", {"repo": "ledger"})
        assert response.status_code == 200, response.text
        report = response.json()
        statuses = {t["test_id"]: t["status"] for t in report["tests"]}
        assert statuses["tests/test_deep.py::<collection>"] == "error", statuses
        assert statuses["tests/test_money.py::test_plain_amount"] == "passed", statuses
        assert report["status"] != "passed"
