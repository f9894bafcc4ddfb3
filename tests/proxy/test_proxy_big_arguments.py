"""Issue 26 #6: arguments over 64 KiB are stored once in the call log, truncated with their
sha256 and size; smaller ones are logged unchanged."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import httpx

from chaosproxy.proxy.logbound import MAX_LOGGED_ARGUMENTS, TRUNCATED, bound_arguments
from chaosproxy.records import CALLS_FILE, CallRecord

BIG = "x" * 3_000_000


async def test_a_3_mb_argument_is_logged_once_as_a_stub(make_proxy: Any, tmp_path: Path) -> None:
    async with make_proxy() as proxy, httpx.AsyncClient(timeout=60) as client:
        big = await client.post(f"{proxy.url}/toy/tools/add_note", json={"text": BIG, "n": 7})
        small = await client.post(f"{proxy.url}/toy/tools/add_note", json={"text": "fine"})
    assert big.status_code < 500 and small.status_code == 200
    lines = (tmp_path / CALLS_FILE).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    assert len(lines[0]) < 2 * MAX_LOGGED_ARGUMENTS  # was 2 × 3 MB: sent and forwarded
    first, second = (CallRecord.model_validate_json(line) for line in lines)
    assert first.arguments is not None
    encoded = json.dumps(BIG).encode()
    assert first.arguments["text"][TRUNCATED]["sha256"] == hashlib.sha256(encoded).hexdigest()
    assert first.arguments["text"][TRUNCATED]["bytes"] == len(encoded)
    assert first.arguments["n"] == 7  # small values stay exact
    assert first.forwarded_arguments == first.arguments
    assert second.arguments == {"text": "fine"}


def test_bound_arguments_keeps_small_ones_and_fits_big_ones() -> None:
    small = {"a": "y" * 1000}
    assert bound_arguments(small) is small
    many = {f"k{i}": "z" * 100 for i in range(2000)}  # 2000 small values, 200+ KiB together
    bounded = bound_arguments(many)
    assert bounded is not None
    assert len(json.dumps(bounded)) <= MAX_LOGGED_ARGUMENTS
    whole = {f"k{i}": i for i in range(20000)}  # no single value to cut: the whole is a stub
    assert list(bound_arguments(whole) or {}) == [TRUNCATED]
