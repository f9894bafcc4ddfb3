"""The structured diff on plain JSON values."""

from __future__ import annotations

from typing import Any

import pytest
from chaosproxy.domains.kit.diff import diff

CASES: list[tuple[str, Any, Any, list[tuple[str, str, Any, Any]]]] = [
    ("equal", {"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}, []),
    ("scalar change", {"a": 1}, {"a": 2}, [("a", "changed", 1, 2)]),
    ("int vs float", {"a": 1}, {"a": 1.0}, [("a", "changed", 1, 1.0)]),
    (
        "nested",
        {"b": [{"s": "held"}]},
        {"b": [{"s": "confirmed"}]},
        [("b[0].s", "changed", "held", "confirmed")],
    ),
    ("list grew", {"x": [1]}, {"x": [1, 5]}, [("x[1]", "added", None, 5)]),
    ("list shrank", {"x": [1, 5]}, {"x": [1]}, [("x[1]", "removed", 5, None)]),
    (
        "key added and removed",
        {"k": 1},
        {"j": 2},
        [("k", "removed", 1, None), ("j", "added", None, 2)],
    ),
    ("type change", {"a": None}, {"a": {"z": 1}}, [("a", "changed", None, {"z": 1})]),
    ("root scalar", 1, 2, [("(root)", "changed", 1, 2)]),
]


@pytest.mark.parametrize(
    ("before", "after", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_diff(before: Any, after: Any, expected: list[tuple[str, str, Any, Any]]) -> None:
    assert [(c.path, c.op, c.before, c.after) for c in diff(before, after)] == expected
