"""The orjson fast paths give what the stdlib gave: the same parsed values, keys that tell
different arguments apart, copies that share nothing (values worked out by hand)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from chaosproxy.faults.episode import EpisodeState, args_key, json_copy
from chaosproxy.proxy.effects import encode_body
from chaosproxy.proxy.jsonbody import BadJson, _long_number, loads, parse


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"a":1,"a":2}', {"a": 2}),  # the last duplicate wins, as in json
        (b"123456789012345678901234567890", 123456789012345678901234567890),  # not a float
        (b"\xef\xbb\xbf{}", {}),  # a UTF-8 BOM, read by json
        (b'{"x": [1, 2.50, true, null]}', {"x": [1, 2.5, True, None]}),
        (b"-0", 0),
    ],
)
def test_parse_gives_what_json_gives(body: bytes, expected: Any) -> None:
    value = parse(body)
    assert value == expected
    assert type(value) is type(expected)
    assert value == json.loads(body)


def test_parse_reads_nan_and_huge_numbers_as_json_does() -> None:
    assert math.isnan(parse(b"NaN"))
    assert parse(b"1e400") == math.inf


def test_hostile_json_is_still_refused() -> None:
    with pytest.raises(BadJson, match="surrogate"):
        loads(b'{"q": "\\ud800"}')
    assert loads(b"not json") is None


def test_args_key_is_canonical_and_tells_arguments_apart() -> None:
    assert args_key({"b": 1, "a": "x"}) == args_key({"a": "x", "b": 1}) == '{"a":"x","b":1}'
    keys = {
        args_key({"a": None}),
        args_key({"a": math.nan}),  # orjson would write null: json writes NaN instead
        args_key({"a": math.inf}),
        args_key({"a": 1}),
        args_key({"a": 1.0}),
        args_key({"a": 2**70}),  # over 64 bits: json
    }
    assert len(keys) == 6
    assert args_key({"a": math.nan}) == '{"a": NaN}'


def test_json_copy_shares_nothing_and_kept_replies_stay_put() -> None:
    body = {"items": [{"id": 1, "tags": ["a"]}], "n": 1.5, "ok": True, "none": None}
    copied = json_copy(body)
    assert copied == body
    copied["items"][0]["tags"].append("b")
    assert body["items"][0]["tags"] == ["a"]
    state = EpisodeState(episode="e", key="e", seed=1)
    state.remember("svc/t", "k", body)
    body["items"].clear()  # the caller's body changes after: the kept reply does not
    earlier, basis = state.earlier("svc/t", "k")
    assert earlier == {"items": [{"id": 1, "tags": ["a"]}], "n": 1.5, "ok": True, "none": None}
    assert basis is not None
    earlier["n"] = 0  # nor does a served copy reach back into the cache
    assert state.earlier("svc/t", "other")[0]["n"] == 1.5


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # worked out by hand: what json.dumps(separators=(",", ":"), ensure_ascii=False) writes
        ({"a": [1, 2.5, True, None], "é": "x\n😀"}, '{"a":[1,2.5,true,null],"é":"x\\n😀"}'),
        ({"small": 1e-05, "big": 1e16}, '{"small":1e-05,"big":1e+16}'),  # orjson: 0.00001, 1e16
        ([0.0001, 1e15], "[0.0001,1000000000000000.0]"),
        ({"v": math.nan, "w": -math.inf}, '{"v":NaN,"w":-Infinity}'),  # orjson: null
        ({1: "int key"}, '{"1":"int key"}'),  # orjson refuses keys that are not text
        ({"n": 2**70}, '{"n":1180591620717411303424}'),  # orjson refuses over 64 bits
        ({"error": {"type": "timeout"}}, '{"error":{"type":"timeout"}}'),
    ],
)
def test_encode_body_writes_what_json_writes(body: Any, expected: str) -> None:
    assert encode_body(body) == expected.encode()
    assert encode_body(body) == json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def test_encode_body_still_refuses_what_json_refuses() -> None:
    with pytest.raises(UnicodeEncodeError):
        encode_body({"q": "\ud800"})
    with pytest.raises(TypeError):
        encode_body({"when": object()})


@pytest.mark.parametrize(
    ("body", "long"),
    [
        (b'{"n": 123456789012345678}', False),  # 18 digits: orjson reads it
        (b'{"n": 1234567890123456789}', True),  # 19 in a row
        (b'{"n": 12345678901234567.89}', False),  # the point breaks the run
        (b'{"id": "x1234567890123456789y"}', True),  # inside text too, as the regex did
        (b"", False),
    ],
)
def test_long_number_finds_what_the_regex_found(body: bytes, long: bool) -> None:
    assert _long_number(body) is long
    assert (re.search(rb"[0-9]{19}", body) is not None) is long
