"""A first agent for `chaosproxy run --agent-cmd`: the README's "Your agent in five minutes".

It books the cheapest flight for travel-03 (LON to PAR on 2026-03-12 for Bob Hale) through the
REST tools chaosproxy hands it in CHAOS_REST_BASE, with the Python standard library only.
`--retries 0` makes it give up at the first error, so the same run shows what retrying buys.
Replace the plan with your agent's loop (a model choosing the calls) and keep the rest.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any

RETRYABLE = {429, 500, 502, 503, 504}


def call(tool: str, arguments: dict[str, Any], retries: int) -> dict[str, Any]:
    """POST one tool call; retry what a careful client retries, honouring Retry-After."""
    url = f"{os.environ['CHAOS_REST_BASE']}/tools/{tool}"
    body = json.dumps(arguments).encode()
    for attempt in range(retries + 1):
        request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                result: dict[str, Any] = json.loads(reply.read())
                return result
        except urllib.error.HTTPError as error:
            if error.code not in RETRYABLE or attempt == retries:
                raise
            time.sleep(float(error.headers.get("Retry-After") or 0.2 * 2**attempt))
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError):
            if attempt == retries:
                raise
            time.sleep(0.2 * 2**attempt)
    raise AssertionError("unreachable")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--retries", type=int, default=3)
    retries = parser.parse_args().retries
    print("task:", os.environ["CHAOS_TASK"])
    found = call("search_flights", {"origin": "LON", "dest": "PAR", "date": "2026-03-12"}, retries)
    offers = [o for o in found["flights"] if o["seats_left"] > 0]
    cheapest = min(offers, key=lambda o: (o["price"]["amount"], o["departure"]))["flight_id"]
    hold = call("hold_flight", {"flight_id": cheapest}, retries)
    booking = {
        "flight_id": cheapest,
        "passenger": "Bob Hale",
        "payment_info": "corp_amex_1004",
        "hold_id": hold["hold"]["hold_id"],
    }
    print("booked:", call("confirm_booking", booking, retries))


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # any failure: say why on stderr, exit non-zero (a crash)
        print(f"gave up: {error!r}", file=sys.stderr)
        sys.exit(1)
