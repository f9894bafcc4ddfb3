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

The agent is untrusted (docs/security.md). It gets the runner's environment minus every
`CHAOSPROXY_*` variable (the oracle and control tokens live there) and minus any variable
carrying one of their values under another name; `--agent-env-only NAME...` gives it only
the named variables. The runner makes itself non-dumpable before starting one, so an agent
of the same uid cannot read the runner's environment or memory through /proc; run as root,
only another uid (`--agent-user`) keeps the agent out of the operator's processes and files.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import pwd
import shutil
import signal
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from chaosproxy.agents.base import AgentContext
from chaosproxy.errors import ChaosError
from chaosproxy.tracing import trace_environment

KILL_GRACE_S = 2.0
SECRET_PREFIX = "CHAOSPROXY_"
"""Variables the operator's processes read (tokens, settings); never the agent's."""
PR_SET_DUMPABLE = 4


class AgentUserError(ChaosError, ValueError):
    """`--agent-user` names no user of this machine, or the runner cannot switch to it."""


@dataclass(frozen=True)
class AgentIsolation:
    """What an `--agent-cmd` agent inherits. `env_only`: only these variables of the
    runner's environment (None: all but the operator's); `user`: run it as this user (a
    name or a uid; only root can), with a fresh HOME of its own."""

    env_only: tuple[str, ...] | None = None
    user: str | None = None

    def check(self) -> None:
        """Refuse a user that does not exist or that this process cannot become, up front."""
        if self.user is None:
            return
        account = resolve_user(self.user)
        if os.geteuid() != 0 and account.pw_uid != os.geteuid():
            raise AgentUserError(
                f"--agent-user {self.user}: only root can run the agent as another user"
            )


def resolve_user(user: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
    except (KeyError, OverflowError):
        raise AgentUserError(f"--agent-user {user}: no such user on this machine") from None


def inherited_environment(source: Mapping[str, str], isolation: AgentIsolation) -> dict[str, str]:
    """The part of the runner's environment an agent may see.

    Every `CHAOSPROXY_*` variable goes, and so does any variable whose value contains one
    of theirs (a token copied under another name)."""
    if isolation.env_only is not None:
        return {name: source[name] for name in isolation.env_only if name in source}
    hidden = {value for name, value in source.items() if name.startswith(SECRET_PREFIX) and value}
    return {
        name: value
        for name, value in source.items()
        if not name.startswith(SECRET_PREFIX) and not any(secret in value for secret in hidden)
    }


def protect_runner() -> None:
    """Make this process non-dumpable: its /proc/<pid>/environ and memory become root's,
    out of reach of an agent of the same (non-root) uid. Linux only; elsewhere a no-op."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


@dataclass(frozen=True)
class CommandOutcome:
    exit_code: int | None
    timed_out: bool


def command_environment(
    context: AgentContext, isolation: AgentIsolation | None = None
) -> dict[str, str]:
    endpoints = context.endpoints[context.domain]
    environment = inherited_environment(os.environ, isolation or AgentIsolation())
    environment.update(
        {
            "CHAOS_TASK": context.task_text,
            "CHAOS_TASK_ID": context.task_id,
            "CHAOS_DOMAIN": context.domain,
            "CHAOS_EPISODE": context.episode,
            "CHAOS_TRANSPORT": context.transport,
            "CHAOS_REST_BASE": endpoints.rest,
            "CHAOS_OPENAPI_URL": endpoints.openapi,
            "CHAOS_MCP_URL": endpoints.mcp,
            "CHAOS_ENDPOINTS": json.dumps(
                {name: e.as_env() for name, e in context.endpoints.items()}
            ),
            "CHAOS_SEED": str(context.seed),
            "CHAOS_TIMEOUT_S": str(context.timeout_s),
        }
    )
    environment.update(trace_environment())  # TRACEPARENT inside a traced episode
    return environment


def _as_user(user: str, environment: dict[str, str]) -> tuple[dict[str, object], Path]:
    """Popen arguments that start the agent as `user`, and its fresh HOME (removed after)."""
    account = resolve_user(user)
    home = Path(tempfile.mkdtemp(prefix="chaosproxy-agent-home-"))
    os.chown(home, account.pw_uid, account.pw_gid)
    environment.update({"HOME": str(home), "USER": account.pw_name, "LOGNAME": account.pw_name})
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}, home


async def run_command(
    command: str,
    context: AgentContext,
    output_dir: Path,
    isolation: AgentIsolation | None = None,
) -> CommandOutcome:
    """Run `command` through the shell with the episode's environment; keep stdout and stderr."""
    isolation = isolation or AgentIsolation()
    output_dir.mkdir(parents=True, exist_ok=True)
    protect_runner()
    environment = command_environment(context, isolation)
    identity: dict[str, object] = {}
    home: Path | None = None
    if isolation.user is not None:
        identity, home = _as_user(isolation.user, environment)
    try:
        return await _run(command, context, output_dir, environment, identity)
    finally:
        if home is not None:
            shutil.rmtree(home, ignore_errors=True)


async def _run(
    command: str,
    context: AgentContext,
    output_dir: Path,
    environment: dict[str, str],
    identity: Mapping[str, object],
) -> CommandOutcome:
    with (
        (output_dir / "stdout.txt").open("wb") as stdout,
        (output_dir / "stderr.txt").open("wb") as stderr,
    ):
        process = await asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            env=environment,
            start_new_session=True,
            **identity,  # type: ignore[arg-type]
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
