"""A domain service's memory over thousands of episodes: unbounded, ended, and bounded.

Starts `chaosproxy serve DOMAIN` three times (port 0, 127.0.0.1) and drives N episodes
through each (an oracle reset, then CALLS tool calls per episode), reading the service's
RSS from /proc before and after:

  kept      every episode kept (the behaviour before issue 13: nothing was ever freed)
  deleted   each episode ended with DELETE /_oracle/episodes/{id}, as the runner does
  bounded   no DELETE, the default idle bound (256) evicting the least recently used

    .venv/bin/python benchmarks/service_episodes.py --domain travel --episodes 3000

Linux only (RSS from /proc). Prints one line per mode and the per-episode growth.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx

CLI = "from chaosproxy.cli import main; main()"
TOKEN = "bench-token"


def rss_kb(pid: int) -> int:
    match = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    assert match is not None
    return int(match.group(1))


def run(domain: str, episodes: int, calls: int, mode: str) -> tuple[int, int, int]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "CHAOSPROXY_ORACLE_TOKEN": TOKEN}
    if mode == "kept":
        env["CHAOSPROXY_MAX_IDLE_EPISODES"] = str(episodes + 10)
    process = subprocess.Popen(
        [sys.executable, "-c", CLI, "serve", domain, "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        base = None
        while base is None:
            line = process.stdout.readline()
            if not line:
                raise RuntimeError("serve exited")
            found = re.search(r"oracle\s+(http://127\.0\.0\.1:\d+)/_oracle/", line)
            base = found.group(1) if found else None
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=base, timeout=30) as http:
            for _ in range(100):
                try:
                    http.get("/health")
                    break
                except httpx.ConnectError:
                    time.sleep(0.05)
            tool = http.get("/tools").json()["tools"][0]["name"]
            warm = "warm-up"
            http.post(f"/_oracle/episodes/{warm}/reset", json={}, headers=auth)
            http.post(f"/tools/{tool}", json={}, headers={"X-Chaos-Episode": warm})
            before = rss_kb(process.pid)
            for index in range(episodes):
                episode = f"bench-{index}"
                http.post(f"/_oracle/episodes/{episode}/reset", json={}, headers=auth)
                for _ in range(calls):
                    http.post(f"/tools/{tool}", json={}, headers={"X-Chaos-Episode": episode})
                if mode == "deleted":
                    http.delete(f"/_oracle/episodes/{episode}", headers=auth)
            after = rss_kb(process.pid)
            kept = len(http.get("/_oracle/episodes", headers=auth).json()["episodes"])
        return before, after, kept
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="travel")
    parser.add_argument("--episodes", type=int, default=3000)
    parser.add_argument("--calls", type=int, default=2, help="tool calls per episode")
    options = parser.parse_args()
    print(f"domain {options.domain}, {options.episodes} episodes x {options.calls} calls")
    for mode in ("kept", "deleted", "bounded"):
        before, after, kept = run(options.domain, options.episodes, options.calls, mode)
        growth = after - before
        print(
            f"{mode:8s} RSS {before / 1024:7.1f} MB -> {after / 1024:7.1f} MB "
            f"(+{growth / 1024:6.1f} MB, {growth / options.episodes:6.1f} KB/episode), "
            f"episodes kept {kept}"
        )


if __name__ == "__main__":
    main()
