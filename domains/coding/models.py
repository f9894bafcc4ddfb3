"""Result records of the coding tools: what an agent sees, shaped like a code-hosting API."""

from __future__ import annotations

from typing import Literal

from chaosproxy.domains.coding.lint import LintIssue
from chaosproxy.domains.coding.sandbox import SandboxError, SandboxLimits, TestOutcome
from chaosproxy.domains.coding.security import SecurityFinding
from chaosproxy.domains.coding.state import AnswerItem, FileKind
from pydantic import BaseModel, Field


class RepoSummary(BaseModel):
    name: str
    description: str
    owner: str
    default_branch: str
    language: str
    file_count: int
    revision: int
    updated_at: str


class RepositoryList(BaseModel):
    repositories: list[RepoSummary]
    total: int


class FileInfo(BaseModel):
    path: str
    kind: FileKind
    size_bytes: int
    lines: int
    sha256: str
    revision: int
    updated_at: str


class FileList(BaseModel):
    repo: str
    default_branch: str
    files: list[FileInfo]
    total: int


class FileContent(FileInfo):
    repo: str
    content: str


class WriteResult(BaseModel):
    repo: str
    path: str
    created: bool
    changed: bool
    file: FileInfo
    repo_revision: int


class PatchResult(BaseModel):
    repo: str
    path: str
    replacements: int
    first_changed_line: int
    diff: str
    file: FileInfo
    repo_revision: int


class DeleteResult(BaseModel):
    repo: str
    path: str
    deleted: bool
    repo_revision: int


class SymbolLocation(BaseModel):
    path: str
    line: int
    kind: Literal["function", "class", "method", "assignment", "reference", "import"]
    code: str


class SymbolResult(BaseModel):
    repo: str
    name: str
    definitions: list[SymbolLocation]
    references: list[SymbolLocation]
    total: int


class InterpreterResult(BaseModel):
    repo: str
    status: Literal["ok", "error", "timeout", "memory_exceeded", "crashed"]
    stdout: str
    stderr: str
    value: str | None = Field(description="repr() of the snippet's last expression, if any")
    error: SandboxError | None
    limits: SandboxLimits


class LintReport(BaseModel):
    repo: str
    checked_files: list[str]
    issues: list[LintIssue]
    total: int
    clean: bool


class TestSummary(BaseModel):
    passed: int
    failed: int
    errors: int
    total: int


class TestRunReport(BaseModel):
    repo: str
    status: Literal["passed", "failed", "error", "timeout"]
    tests: list[TestOutcome]
    summary: TestSummary
    error: SandboxError | None = None


class SecurityReport(BaseModel):
    repo: str
    checked_files: list[str]
    findings: list[SecurityFinding]
    total: int
    by_severity: dict[str, int]


class AnswerReceipt(BaseModel):
    answer_id: str
    repo: str
    status: Literal["recorded"]
    items: list[AnswerItem]
    submitted_at: str
