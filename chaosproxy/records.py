"""The run directory: its layout and the records in it.

The proxy and the runner write these files; the scorer and the report read them and
nothing else, so any run can be re-scored offline. Every model here is the contract
between a writer and a reader: change a field and both sides change with it.

Layout of a run directory::

    RUN_DIR/
      config.json              RunConfig: seed, profiles as resolved, grid, agent, versions
      calls.jsonl              one CallRecord per proxied request, flushed before the reply
      tasks.jsonl              one TaskMeta per task in the suite
      episodes.jsonl           one EpisodeRecord per finished episode (append-only)
      episodes/<episode>/      journal.json (the kit's Journal), stdout.txt, stderr.txt
      grid.jsonl               GridEntry per episode of the whole grid (every shard's too)
      texts.jsonl              TaskText per (task, ε): the words every trial and shard reads
      results.json             written by `chaosproxy score`
      episodes.csv             written by `chaosproxy score`
      report.html              written by `chaosproxy report`
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chaosproxy.errors import ChaosError
from chaosproxy.types import DrawKey, FaultRecord, Journal, JournalEntry, Transport

__all__ = ["DrawKey", "FaultRecord", "Transport"]

CONFIG_FILE = "config.json"
CALLS_FILE = "calls.jsonl"
TASKS_FILE = "tasks.jsonl"
EPISODES_FILE = "episodes.jsonl"
EPISODE_DIR = "episodes"
JOURNAL_FILE = "journal.json"
RESULTS_FILE = "results.json"
EPISODES_CSV = "episodes.csv"
REPORT_FILE = "report.html"
GRID_FILE = "grid.jsonl"
TEXTS_FILE = "texts.jsonl"

RecordT = TypeVar("RecordT", bound=BaseModel)


class Record(BaseModel):
    """Base of run-directory records: unknown fields are kept, so old readers read new files."""

    model_config = ConfigDict(extra="allow")


class CallRecord(Record):
    """One proxied HTTP request. Tool calls have a step; protocol traffic (MCP
    initialize, tools/list, GET streams, OpenAPI fetches) has step None.

    `kind` "model_call" is a request to a model endpoint (`/v1/chat/completions`,
    `/v1/embeddings`, `/v1/responses`, `/v1/completions`, `/v1/messages`, Ollama's
    `/api/chat`...; docs/proxy.md): not an agent step (step None), with `model` and `usage`
    (the reply's token counts, in the provider's own keys) when known. `note` says why a
    fault could not act (e.g. a non-JSON body passes untouched by body faults); `route` is
    the REST route template a generic REST call was identified by."""

    ts: float
    run_seed: int
    episode: str
    episode_key: str
    step: int | None
    domain: str
    tool: str | None
    transport: Transport
    kind: Literal["tool_call", "protocol", "model_call"]
    method: str
    path: str
    rpc_method: str | None = None
    arguments: dict[str, Any] | None = None
    forwarded_arguments: dict[str, Any] | None = None
    fault: FaultRecord | None = None
    fault_delivered: bool = False
    upstream_called: bool = False
    upstream_status: int | None = None
    status: int
    outcome: Literal["ok", "tool_error", "http_error", "rpc_error", "reset", "timeout"] = "ok"
    latency_ms: float
    bytes_in: int = 0
    bytes_out: int = 0
    retry_after_s: float | None = None
    error: str | None = None
    note: str | None = None
    route: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    episode_restarted: bool | None = None
    """True on the first record of an episode the proxy had evicted while idle (`up
    --idle-episodes`): from this record on it starts afresh (steps from 1, fault draws from
    the start). None (absent) otherwise; absent in run directories written before it."""
    attempt: str | None = None
    """The episode attempt that made this call (set by the runner when it configures the
    episode, stamped by the proxy): the scorer keeps only the recorded attempt's calls, so an
    interrupted attempt's calls never mix into its re-run. None in older run directories and
    for calls outside a configured attempt."""
    paced_ms: float | None = None
    """A model call the proxy paced (`--rpm/--tpm`, chaosproxy.pacing): the milliseconds it
    waited for the pacer before going upstream (included in `latency_ms`, the agent did
    wait; never an injected delay). Absent when no pacer was set."""
    provider_retries: int | None = None
    """A model call the real provider answered 429/5xx: how many times the proxy sent it
    again (proxy/provider.py); `status`/`upstream_status` are the last reply's. Absent (None)
    when it was sent once, and in older run directories."""
    provider_wait_ms: float | None = None
    """The milliseconds waited between those re-sends (Retry-After or backoff)."""


class TaskMeta(Record):
    """What the scorer needs to know about a task without importing its domain."""

    id: str
    domain: str
    description: str
    l_min: int
    difficulty: str
    tags: list[str] = Field(default_factory=list)
    escalation_acceptable: bool = False


EpisodeOutcome = Literal["completed", "agent_crash", "timeout", "infra_error"]


class TokenUsage(Record):
    """Tokens a model-driven agent spent in one episode, summed from each response's `usage`."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class GoalCheck(Record):
    """The task verifier's verdict on the state after one journal entry (one
    state-changing step), recorded by the runner so the scorer needs no domain code.
    `holds` is None when the verifier raised on that intermediate state."""

    seq: int
    step: int | None
    tool: str
    holds: bool | None


class EpisodeRecord(Record):
    """One finished episode. `outcome` separates infrastructure from agent failures:
    only `completed` episodes (including ones where the agent failed the task) are
    evaluable."""

    episode: str
    episode_key: str
    task_id: str
    domain: str
    epsilon: float
    profile: str
    trial: int
    agent: str
    transport: Transport
    seed: int
    outcome: EpisodeOutcome
    success: bool | None = None
    t_success: int | None = None
    escalated: bool = False
    exit_code: int | None = None
    started_at: float
    duration_s: float
    task_text: str
    perturbations: list[str] = Field(default_factory=list)
    error: str | None = None
    model: str | None = None
    """The model behind a model-driven agent (None for scripted agents and --agent-cmd)."""
    usage: TokenUsage | None = None
    model_calls: int | None = None
    model_latency_s: float | None = None
    """Seconds spent waiting for the model, summed over its calls."""
    usage_missing: int | None = None
    """Model calls whose response carried no `usage`: their tokens are not in `usage`."""
    cost_usd: float | None = None
    """From `usage` and the run's --price for the model; None when no price was given."""
    mock_model: bool | None = None
    """True when the answers came from `chaosproxy mock-model`, not a real model."""
    # Added for the scorer (which imports no domain code); None in older run directories.
    goal_held_initially: bool | None = None
    goal_checks: list[GoalCheck] | None = None
    non_idempotent_tools: list[str] | None = None
    attempt: str | None = None
    """This record's attempt (unique per run of the episode); its calls and journal carry the
    same id. None in run directories written before attempts were recorded."""


JournalEntryRecord = JournalEntry
"""One state-changing call in RUN_DIR/episodes/<episode>/journal.json (the shared type)."""
JournalRecord = Journal
"""journal.json as its readers see it: the one `chaosproxy.types.Journal`."""


class GridEntry(Record):
    """One episode of a run's whole grid (grid.jsonl), so `merge` can say what is missing."""

    episode: str
    episode_key: str
    agent: str
    task_id: str
    domain: str
    epsilon: float
    profile: str
    trial: int


class TaskText(Record):
    """The text of one (task, ε) cell as the run computed it once (texts.jsonl): shards and
    `--resume` read it instead of perturbing or paraphrasing again."""

    task_id: str
    epsilon: float
    text: str
    relations: list[str] = Field(default_factory=list)


class RunConfig(Record):
    """How a run (or an `up` session) was configured, as resolved when it started."""

    kind: Literal["run", "up"]
    seed: int
    created_at: float
    versions: dict[str, str]
    profiles: dict[str, dict[str, Any]] = Field(default_factory=dict)
    agent: str | None = None
    transport: Transport | None = None
    suite: str | None = None
    domains: list[str] = Field(default_factory=list)
    epsilons: list[float] = Field(default_factory=list)
    trials: int | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    command: list[str] = Field(default_factory=list)
    """The command line that started it (program name without its directory); empty in
    run directories written before it was recorded."""


class RunDirError(ChaosError, ValueError):
    """A run directory file that cannot be read; the message names the file and line."""


def read_jsonl(path: Path, model: type[RecordT]) -> Iterator[RecordT]:
    """Yield validated records; a bad line raises RunDirError naming file and line.

    A torn last line (a writer killed mid-write) is skipped, since every complete
    record before it is still good.
    """
    with path.open("r", encoding="utf-8") as handle:
        lines = handle.readlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        is_last = number == len(lines)
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            if is_last and not line.endswith("\n"):
                return
            raise RunDirError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
        try:
            yield model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise RunDirError(f"{path}:{number}: field '{where}': {first['msg']}") from exc


def append_jsonl(path: Path, record: BaseModel) -> None:
    """Append one record as a line and flush it to the OS before returning."""
    line = record.model_dump_json() + "\n"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
