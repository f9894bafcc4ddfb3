"""Issue 26 #4 under the pytest plugin: a chaos test's agent reaches only its own episode."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(300)

ATTACK = """
import httpx
import pytest


@pytest.mark.chaos(profiles=["lambda0.0"], trials=2)
def test_attack(chaos_episode):
    own = chaos_episode.url("travel")
    proxy = own.split("/e/")[0]
    tool = "/travel/tools/get_itinerary"
    sibling = chaos_episode.id[:-1] + ("2" if chaos_episode.id.endswith("1") else "1")
    assert httpx.post(own + "/tools/get_itinerary", json={}).status_code == 200
    assert chaos_episode.id not in own
    assert httpx.post(f"{proxy}/e/{sibling}{tool}", json={}).status_code == 403
    assert httpx.post(f"{proxy}/e/{chaos_episode.id}{tool}", json={}).status_code == 403
    by_header = httpx.post(proxy + tool, json={}, headers={"X-Chaos-Episode": sibling})
    assert by_header.status_code == 403
"""


def test_a_chaos_test_cannot_reach_a_sibling_episode(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(ATTACK)
    result = pytester.runpytest("--chaos-domains", "travel", "-q")
    result.assert_outcomes(passed=2)
