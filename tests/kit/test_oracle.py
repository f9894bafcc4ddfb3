"""Oracle routes: reset (task, given state, default), state, journal, diff, delete, tasks, hints."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from kit_toy import make_state

CUSTOMER = {"name": "Ana Ruiz", "email": "ana@example.com"}


async def test_reset_to_a_task_then_journal_and_diff(base_url: str, episode: str) -> None:
    async with httpx.AsyncClient(base_url=base_url, headers={"X-Chaos-Episode": episode}) as http:
        reset = (
            await http.post(f"/_oracle/episodes/{episode}/reset", json={"task_id": "toy-total-01"})
        ).json()
        await http.post(
            "/tools/set_note", json={"key": "a", "value": "1"}, headers={"X-Chaos-Step": "1"}
        )
        await http.post("/tools/submit_answer", json={"total": 38.0}, headers={"X-Chaos-Step": "3"})
        journal = (await http.get(f"/_oracle/episodes/{episode}/journal")).json()
        diff = (await http.get(f"/_oracle/episodes/{episode}/diff")).json()
    assert reset["task_id"] == "toy-total-01" and reset["state"]["notes"] == {"seeded": "yes"}
    assert (
        journal["task_id"] == "toy-total-01"
        and journal["episode"] == episode
        and journal["domain"] == "toyshop"
    )
    assert [(e["seq"], e["step"], e["tool"]) for e in journal["entries"]] == [
        (1, 1, "set_note"),
        (2, 3, "submit_answer"),
    ]
    assert journal["entries"][0]["state_after"]["answer"] is None
    assert journal["entries"][1]["state_after"]["answer"] == 38.0
    assert journal["initial_state"] == reset["state"]
    assert diff["changes"] == [
        {"path": "notes.a", "op": "added", "before": None, "after": "1"},
        {"path": "answer", "op": "changed", "before": None, "after": 38.0},
    ]


async def test_reset_replaces_previous_state_and_journal(base_url: str, episode: str) -> None:
    async with httpx.AsyncClient(base_url=base_url, headers={"X-Chaos-Episode": episode}) as http:
        await http.post("/tools/set_note", json={"key": "a", "value": "1"})
        await http.post(f"/_oracle/episodes/{episode}/reset", json={})
        journal = (await http.get(f"/_oracle/episodes/{episode}/journal")).json()
    assert (
        journal["entries"] == []
        and journal["final_state"]["notes"] == {}
        and journal["task_id"] is None
    )


async def test_reset_to_a_given_state(base_url: str, episode: str) -> None:
    state = make_state().model_dump(mode="json")
    state["items"][0]["stock"] = 1
    async with httpx.AsyncClient(base_url=base_url, headers={"X-Chaos-Episode": episode}) as http:
        await http.post(f"/_oracle/episodes/{episode}/reset", json={"state": state})
        refused = await http.post(
            "/tools/create_order", json={"sku": "SKU-1", "quantity": 2, "customer": CUSTOMER}
        )
        current = (await http.get(f"/_oracle/episodes/{episode}/state")).json()
    assert refused.status_code == 409
    assert current == state


BAD_RESETS: list[tuple[str, Any, int, str | None]] = [
    ("unknown task", {"task_id": "no-such-task"}, 404, "task_id"),
    (
        "state wrong type",
        {"state": {"items": [{"sku": "S", "name": "n", "price": "free", "stock": 1}]}},
        422,
        "state.items[0].price",
    ),
    ("state not an object", {"state": [1]}, 422, "state"),
    ("both", {"task_id": "toy-buy-01", "state": {}}, 422, "task_id"),
    ("unknown key", {"task": "toy-buy-01"}, 422, "task"),
    ("malformed json", "{", 400, "(body)"),
]


@pytest.mark.parametrize(
    ("body", "status", "field"), [c[1:] for c in BAD_RESETS], ids=[c[0] for c in BAD_RESETS]
)
async def test_bad_reset_is_a_4xx_naming_the_field(
    base_url: str, episode: str, body: Any, status: int, field: str | None
) -> None:
    async with httpx.AsyncClient(base_url=base_url) as http:
        path = f"/_oracle/episodes/{episode}/reset"
        response = await (
            http.post(path, content=body) if isinstance(body, str) else http.post(path, json=body)
        )
        state = await http.get(f"/_oracle/episodes/{episode}/state")
    assert response.status_code == status
    assert response.json()["error"].get("field") == field
    assert state.status_code == 404  # a refused reset creates nothing


@pytest.mark.parametrize(
    ("method", "suffix"), [("GET", "/state"), ("GET", "/journal"), ("GET", "/diff"), ("DELETE", "")]
)
async def test_unknown_episode_is_a_404_naming_it(
    base_url: str, episode: str, method: str, suffix: str
) -> None:
    async with httpx.AsyncClient(base_url=base_url) as http:
        response = await http.request(method, f"/_oracle/episodes/{episode}{suffix}")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "unknown_episode"
    assert episode in response.json()["error"]["message"]


async def test_delete_forgets_the_episode(base_url: str, episode: str) -> None:
    async with httpx.AsyncClient(base_url=base_url) as http:
        await http.post(f"/_oracle/episodes/{episode}/reset", json={})
        listed = (await http.get("/_oracle/episodes")).json()["episodes"]
        deleted = await http.delete(f"/_oracle/episodes/{episode}")
        after = await http.get(f"/_oracle/episodes/{episode}/state")
    assert episode in listed
    assert deleted.json() == {"deleted": episode}
    assert after.status_code == 404


async def test_diff_of_two_given_states(base_url: str) -> None:
    body = {"before": {"a": [1, 2], "b": {"c": 1}}, "after": {"a": [1], "b": {"c": 2}, "d": True}}
    async with httpx.AsyncClient(base_url=base_url) as http:
        response = await http.post("/_oracle/diff", json=body)
        missing = await http.post("/_oracle/diff", json={"before": {}})
    assert response.json()["changes"] == [
        {"path": "a[1]", "op": "removed", "before": 2, "after": None},
        {"path": "b.c", "op": "changed", "before": 1, "after": 2},
        {"path": "d", "op": "added", "before": None, "after": True},
    ]
    assert missing.status_code == 422 and missing.json()["error"]["field"] == "after"


async def test_tasks_and_hints(base_url: str) -> None:
    async with httpx.AsyncClient(base_url=base_url) as http:
        tasks = (await http.get("/_oracle/tasks")).json()
        hints = (await http.get("/_oracle/hints")).json()
    assert [task["id"] for task in tasks["tasks"]] == ["toy-buy-01", "toy-total-01"]
    assert tasks["tasks"][1] == {
        "id": "toy-total-01",
        "domain": "toyshop",
        "description": "What do all items up to 40 cost together?",
        "l_min": 2,
        "difficulty": "simple",
        "tags": ["answer"],
        "escalation_acceptable": False,
        "quality_rules": [],
    }
    assert hints["critical_args"] == {
        "create_order": {
            "sku": {"kind": "choice", "values": ["SKU-1", "SKU-2"], "days": [], "factors": []}
        }
    }
    assert hints["harmful_actions"][0]["tool"] == "set_note"
    assert hints["tools"]["create_order"] == {"idempotent": False}
    assert hints["tools"]["escalate_to_human"] == {"idempotent": False}
