"""The coding world: small in-memory Python repositories, their hidden tests, submitted answers.

Hidden tests live in state (the oracle and the verifiers see them) but no tool serves them:
they are the grader's tests, run against the final state in the sandbox.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from chaosproxy.domains.kit import DomainState
from pydantic import BaseModel, Field

FileKind = Literal["module", "test", "doc", "config"]


class RepoFile(BaseModel):
    path: str
    content: str
    revision: int = 1
    updated_at: str


class Repository(BaseModel):
    name: str
    description: str
    owner: str
    default_branch: str = "main"
    language: str = "python"
    revision: int = 1
    updated_at: str
    files: dict[str, RepoFile]
    hidden_tests: dict[str, str] = Field(
        default_factory=dict,
        description="path -> source; the grader's tests, never served to agents",
    )

    def sources(self) -> dict[str, str]:
        return {path: file.content for path, file in self.files.items()}

    def visible_tests(self) -> list[str]:
        return sorted(p for p in self.files if is_test_path(p))


class AnswerItem(BaseModel):
    path: str = Field(description="Repository-relative file path, e.g. 'reportdb/queries.py'")
    name: str = Field(description="Function or test name, e.g. 'top_customers' or 'test_balance'")


class SubmittedAnswer(BaseModel):
    answer_id: str
    repo: str
    items: list[AnswerItem]
    submitted_at: str


class CodingState(DomainState):
    now: str = "2026-03-02T09:00:00Z"
    next_answer_id: int = 1
    repositories: dict[str, Repository] = Field(default_factory=dict)
    answers: list[SubmittedAnswer] = Field(default_factory=list)


def is_test_path(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path.startswith("tests/") and name.startswith("test_") and name.endswith(".py")


def file_kind(path: str) -> FileKind:
    if is_test_path(path):
        return "test"
    if path.endswith(".py"):
        return "module"
    if path.endswith((".md", ".txt", ".rst")):
        return "doc"
    return "config"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
