import pytest
from booking_agent import book_cheapest, rest_tools

TASK = "travel-03-cheapest-lon-par"


@pytest.mark.chaos(profiles=["lambda0.0", "lambda0.2"], trials=3, task=TASK)
def test_books_the_cheapest_flight(chaos_episode):
    call = rest_tools(chaos_episode.url())
    book_cheapest(call, "LON", "PAR", "2026-03-12", "Bob Hale", "corp_amex_1004")
    assert chaos_episode.verdict()
