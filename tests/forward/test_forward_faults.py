"""Same seed, same calls: an agent behind HTTPS_PROXY gets the reverse proxy's faults and log."""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any

import httpx
from forward_helpers import HOST, Certs, Up, forward_args, start_up

PROFILE = """\
name: forward-compare
failure_rate: 0.6
weights:
  ServerError: 1
  SoftRateLimit: 1
  PartialResponse: 1
  EmptyResponse: 1
  SchemaDrift: 1
  StaleData: 1
  ConnectionReset: 3
  ParameterCorruption: 1
"""
CALLS = 24
VARYING = ("ts", "latency_ms")


def outcome(send: Any) -> tuple[Any, ...]:
    """What the agent saw: status and body, or that the connection dropped."""
    try:
        reply = send()
    except httpx.TransportError:
        return ("dropped",)
    return (reply.status_code, reply.headers.get("retry-after"), reply.content)


def searches() -> list[dict[str, str]]:
    return [
        {"origin": "SFO", "dest": "JFK", "date": f"2026-03-{10 + i % 15:02d}"} for i in range(CALLS)
    ]


def test_forward_and_reverse_give_the_same_faults_and_log(
    mitmdump: Path, certs: Certs, https_port: int, tmp_path: Path
) -> None:
    profile = tmp_path / "compare.yaml"
    profile.write_text(PROFILE)
    args = forward_args(certs, https_port, profile=str(profile), seed=11)
    through_forward = start_up(args, tmp_path / "forward")
    through_reverse = start_up(args, tmp_path / "reverse")
    try:
        trust = ssl.create_default_context(cafile=str(through_forward.ca_cert))
        with httpx.Client(proxy=through_forward.forward, verify=trust, timeout=20) as agent:
            forward_seen = [
                outcome(
                    lambda body=body: agent.post(
                        f"https://{HOST}/tools/search_flights",
                        json=body,
                        headers={"X-Chaos-Episode": "cmp"},
                    )
                )
                for body in searches()
            ]
        with httpx.Client(timeout=20) as agent:
            reverse_seen = [
                outcome(
                    lambda body=body: agent.post(
                        f"{through_reverse.proxy}/{HOST}/tools/search_flights",
                        json=body,
                        headers={"X-Chaos-Episode": "cmp"},
                    )
                )
                for body in searches()
            ]
    finally:
        through_forward.stop()
        through_reverse.stop()
    assert forward_seen == reverse_seen
    forward_log = comparable(through_forward)
    reverse_log = comparable(through_reverse)
    assert len(forward_log) == CALLS
    assert forward_log == reverse_log
    faults = {record["fault"]["name"] for record in forward_log if record["fault"]}
    assert len(faults) >= 4, f"too few kinds of fault to compare: {faults}"
    assert ("dropped",) in forward_seen, "a ConnectionReset must reach the agent as a drop"
    assert all(record["domain"] == HOST for record in forward_log)


def comparable(up: Up) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in (up.run_dir / "calls.jsonl").read_text().splitlines()]
    return [{k: v for k, v in record.items() if k not in VARYING} for record in records]
