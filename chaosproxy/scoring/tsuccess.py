"""t_success: the first step after which the task's goal held, re-checked from the journal.

The runner's EpisodeRecord carries its own t_success; when the task's domain is
importable the scorer recomputes it from the journal with the task's verifier, so a run
can be re-scored after a verifier is fixed. The verifier is passed in, so tests use a
fake one.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from chaosproxy.domains.kit.journal import Journal

StateDict = dict[str, Any]
Verifier = Callable[[StateDict, StateDict], bool]


class UnknownStep(Exception):
    """The goal first held after a journal entry that carries no proxy step."""


def first_goal_step(journal: Journal, verify: Verifier) -> int | None:
    """0 if the goal held before any call; the step of the first entry after which it held;
    None if it never held. Raises UnknownStep when that entry has no step."""
    s0 = journal.initial_state
    if verify(s0, s0):
        return 0
    for entry in sorted(journal.entries, key=lambda e: e.seq):
        if verify(s0, entry.state_after):
            if entry.step is None:
                raise UnknownStep(f"journal entry {entry.seq} ({entry.tool}) has no step")
            return entry.step
    return None


class VerifierCache:
    """Finds task verifiers in the domain registry, once per task; None when unavailable."""

    def __init__(self, loader: Callable[[str, str], Verifier | None] | None = None) -> None:
        self._loader = loader or registry_verifier
        self._cache: dict[tuple[str, str], Verifier | None] = {}

    def get(self, domain: str, task_id: str) -> Verifier | None:
        key = (domain, task_id)
        if key not in self._cache:
            self._cache[key] = self._loader(domain, task_id)
        return self._cache[key]


def registry_verifier(domain_name: str, task_id: str) -> Verifier | None:
    """The task's typed verifier wrapped to take state dicts, if its domain is installed."""
    try:
        registry = importlib.import_module("chaosproxy.domains.registry")
        domain = registry.get_domain(domain_name)
    except (ImportError, LookupError, RuntimeError, TypeError, ValueError):
        return None  # domain not installed or broken: the record's t_success is used
    task = getattr(domain, "tasks", {}).get(task_id)
    if task is None:
        return None
    model = domain.state_model

    def verify(s0: StateDict, sf: StateDict) -> bool:
        return bool(task.verify(model.model_validate(s0), model.model_validate(sf)))

    return verify


def recheck(
    journal: Journal | None, verify: Verifier | None, recorded: int | None
) -> tuple[int | None, str]:
    """(t_success, where it came from): "journal" when recomputed, else "record"."""
    if journal is None or verify is None:
        return recorded, "record"
    try:
        return first_goal_step(journal, verify), "journal"
    except (UnknownStep, ValidationError):
        return recorded, "record"
    except Exception:
        # A verifier that crashes on some intermediate state is the domain's bug; the
        # runner's own verdict still stands, so scoring goes on with the recorded value.
        return recorded, "record"


@functools.cache
def registry_idempotent(domain_name: str, tool: str) -> bool | None:
    """Whether the domain declares the tool idempotent; None when unknown."""
    try:
        registry = importlib.import_module("chaosproxy.domains.registry")
        spec = registry.get_domain(domain_name).tools.get(tool)
    except (ImportError, LookupError, RuntimeError, TypeError, ValueError, AttributeError):
        return None
    return None if spec is None else bool(spec.idempotent)
