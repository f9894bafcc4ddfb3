"""`--agent-cmd`: run any program once per episode, in any language.

The contract is environment variables in, exit code out:

    CHAOS_TASK          the task text (ε-perturbed)
    CHAOS_TASK_ID       the task id
    CHAOS_DOMAIN        the task's domain
    CHAOS_EPISODE       the episode id (already baked into the URLs below)
    CHAOS_TRANSPORT     rest | mcp: the transport the run asks for
    CHAOS_REST_BASE     REST base of the task's domain: POST {base}/tools/{name}
    CHAOS_OPENAPI_URL   OpenAPI 3.1 document of the task's domain
    CHAOS_MCP_URL       streamable-HTTP MCP endpoint of the task's domain
    CHAOS_ENDPOINTS     JSON: {domain: {rest_base, openapi_url, mcp_url}} for every domain
    CHAOS_SEED          the run seed
    CHAOS_TIMEOUT_S     the episode time limit in seconds
    TRACEPARENT         the runner's episode span (W3C), when `run --otlp-endpoint` traces

Exit 0 when the agent finished its attempt (whether or not it thinks it succeeded: the
oracle decides). Any other exit code is recorded as an agent crash; running past the
time limit kills the whole process group and is recorded as a runner timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from dataclasses import asdict, dataclass
from pathlib import Path

from chaosproxy.agents.base import AgentContext
from chaosproxy.tracing import trace_environment

KILL_GRACE_S = 2.0


@dataclass(frozen=True)
class CommandOutcome:
    exit_code: int | None
    timed_out: bool


def command_environment(context: AgentContext) -> dict[str, str]:
    endpoints = context.endpoints[context.domain]
    environment = dict(os.environ)
    environment.update(
        {
            "CHAOS_TASK": context.task_text,
            "CHAOS_TASK_ID": context.task_id,
            "CHAOS_DOMAIN": context.domain,
            "CHAOS_EPISODE": context.episode,
            "CHAOS_TRANSPORT": context.transport,
            "CHAOS_REST_BASE": endpoints.rest_base,
            "CHAOS_OPENAPI_URL": endpoints.openapi_url,
            "CHAOS_MCP_URL": endpoints.mcp_url,
            "CHAOS_ENDPOINTS": json.dumps(
                {name: asdict(e) for name, e in context.endpoints.items()}
            ),
            "CHAOS_SEED": str(context.seed),
            "CHAOS_TIMEOUT_S": str(context.timeout_s),
        }
    )
    environment.update(trace_environment())  # TRACEPARENT inside a traced episode
    return environment


async def run_command(command: str, context: AgentContext, output_dir: Path) -> CommandOutcome:
    """Run `command` through the shell with the episode's environment; keep stdout and stderr."""
    output_dir.mkdir(parents=True, exist_ok=True)
    with (
        (output_dir / "stdout.txt").open("wb") as stdout,
        (output_dir / "stderr.txt").open("wb") as stderr,
    ):
        process = await asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            env=command_environment(context),
            start_new_session=True,
        )
        try:
            exit_code = await asyncio.wait_for(process.wait(), timeout=context.timeout_s)
        except TimeoutError:
            await _kill_group(process)
            return CommandOutcome(exit_code=process.returncode, timed_out=True)
        except asyncio.CancelledError:
            await _kill_group(process)
            raise
    return CommandOutcome(exit_code=exit_code, timed_out=False)


async def _kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the agent's whole process group, then SIGKILL what is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            await asyncio.wait_for(process.wait(), timeout=KILL_GRACE_S)
            return
        except TimeoutError:
            continue
