"""episodes.jsonl and journal.json as the scorer reads them: msgspec structs, not pydantic models.

A run of a million calls can hold a hundred thousand episodes; a pydantic EpisodeRecord
kept per episode costs about 5 KB (its fields-set, extras and nested models), a slotted
struct a fraction of that, and decoding is several times faster. journal.json is read for
every episode with a faulted write or an injected payload; msgspec decodes it into the
struct below and drops it after the episode.

The structs mirror records.EpisodeRecord / GoalCheck / TokenUsage and types.Journal /
JournalEntry field for field (same names, types, defaults; tests/scoring hold them to it).
As in scoring.callrows, a document msgspec's strict types refuse goes to pydantic, which
raises the error the scorer has always reported or accepts it, and its coerced values
become the struct, so every file reads exactly as it did through the pydantic models.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

import msgspec
from pydantic import BaseModel

from chaosproxy.records import EpisodeRecord, JournalEntryRecord, JournalRecord
from chaosproxy.types import Transport

EpisodeOutcome = Literal["completed", "agent_crash", "timeout", "infra_error"]


class UsageRow(msgspec.Struct, gc=False):
    """records.TokenUsage."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class GoalCheckRow(msgspec.Struct, gc=False):
    """records.GoalCheck."""

    seq: int
    step: int | None
    tool: str
    holds: bool | None


class EpisodeRow(msgspec.Struct, gc=False):
    """records.EpisodeRecord (required fields first, as a struct needs them)."""

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
    started_at: float
    duration_s: float
    task_text: str
    success: bool | None = None
    t_success: int | None = None
    escalated: bool = False
    exit_code: int | None = None
    perturbations: list[str] = msgspec.field(default_factory=list)
    error: str | None = None
    model: str | None = None
    usage: UsageRow | None = None
    model_calls: int | None = None
    model_latency_s: float | None = None
    usage_missing: int | None = None
    cost_usd: float | None = None
    mock_model: bool | None = None
    goal_held_initially: bool | None = None
    goal_checks: list[GoalCheckRow] | None = None
    non_idempotent_tools: list[str] | None = None
    attempt: str | None = None


class JournalEntryRow(msgspec.Struct):
    """types.JournalEntry."""

    seq: int
    step: int | None
    tool: str
    arguments: dict[str, Any]
    result: dict[str, Any] | None = None
    state_after: dict[str, Any] = msgspec.field(default_factory=dict)
    transport: Transport | None = None


class JournalRow(msgspec.Struct):
    """types.Journal."""

    episode: str
    domain: str
    task_id: str | None = None
    initial_state: dict[str, Any] = msgspec.field(default_factory=dict)
    entries: list[JournalEntryRow] = msgspec.field(default_factory=list)
    final_state: dict[str, Any] = msgspec.field(default_factory=dict)
    attempt: str | None = None


Episode = EpisodeRecord | EpisodeRow
"""An episodes.jsonl record: the pydantic model, or the scorer's struct of it."""

EPISODE_DECODER = msgspec.json.Decoder(EpisodeRow)
JOURNAL_DECODER = msgspec.json.Decoder(JournalRow)


def shared_strings(row: EpisodeRow) -> EpisodeRow:
    """The row with the strings many episodes repeat (task, domain, profile, agent, task
    text, model, tool names) interned: one copy each instead of one per episode."""
    row.task_id = sys.intern(row.task_id)
    row.domain = sys.intern(row.domain)
    row.profile = sys.intern(row.profile)
    row.agent = sys.intern(row.agent)
    row.task_text = sys.intern(row.task_text)
    if row.model is not None:
        row.model = sys.intern(row.model)
    if row.non_idempotent_tools is not None:
        row.non_idempotent_tools = [sys.intern(tool) for tool in row.non_idempotent_tools]
    for check in row.goal_checks or ():
        check.tool = sys.intern(check.tool)
    return row


def episode_from_record(record: EpisodeRecord) -> EpisodeRow:
    """The struct of a record pydantic validated (its coerced values, extras dropped)."""
    return msgspec.convert(record.model_dump(), EpisodeRow, strict=False)


def journal_from_model(journal: BaseModel) -> JournalRow:
    """The struct of a journal pydantic validated (its coerced values, extras dropped)."""
    return msgspec.convert(journal.model_dump(), JournalRow, strict=False)


AnyJournal = JournalRecord | JournalRow
"""A journal.json: the pydantic model, or the scorer's struct of it."""
AnyJournalEntry = JournalEntryRecord | JournalEntryRow
