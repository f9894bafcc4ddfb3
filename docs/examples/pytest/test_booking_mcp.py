"""The same agent over MCP, as an async test (pytest-asyncio)."""

import pytest
from booking_agent import mcp_book_cheapest

TASK = "travel-03-cheapest-lon-par"


@pytest.mark.chaos(profiles=["lambda0.0", "lambda0.2"], trials=3, task=TASK)
async def test_books_the_cheapest_flight_over_mcp(chaos_episode):
    await mcp_book_cheapest(
        chaos_episode.mcp_url(), "LON", "PAR", "2026-03-12", "Bob Hale", "corp_amex_1004"
    )
    assert chaos_episode.verdict()
    # what the agent met, for the failure message when it did not cope
    print([f"{f.name}@{f.tool}#{f.step}" for f in chaos_episode.faults()])
