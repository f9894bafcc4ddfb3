"""The episode record the replay tests rerun: travel-03 (cheapest LON-PAR flight), trial 1."""

from __future__ import annotations

from chaosproxy.records import EpisodeRecord

TASK = "travel-03-cheapest-lon-par"


def cheapest_flight_episode(agent: str) -> EpisodeRecord:
    key = f"{TASK}~e0~lambda0.0~t1"
    return EpisodeRecord(
        episode=f"{agent}~{key}",
        episode_key=key,
        task_id=TASK,
        domain="travel",
        epsilon=0.0,
        profile="lambda0.0",
        trial=1,
        agent=agent,
        transport="rest",
        seed=7,
        outcome="completed",
        started_at=0.0,
        duration_s=0.0,
        task_text="Book the cheapest flight from LON to PAR on 2026-03-12 for Bob Hale.",
    )
