"""Shared argument checks for the coding tools: which repository, which path."""

from __future__ import annotations

import re

from chaosproxy.domains.coding.models import FileInfo
from chaosproxy.domains.coding.state import CodingState, RepoFile, Repository, file_kind, sha256
from chaosproxy.domains.kit import ToolError

_PATH = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")
WRITABLE_SUFFIXES = (".py", ".md", ".txt", ".cfg", ".toml", ".ini", ".json", ".yml", ".yaml")
MAX_FILE_CHARS = 100_000


def repository(state: CodingState, name: str) -> Repository:
    found = state.repositories.get(name)
    if found is None:
        known = ", ".join(sorted(state.repositories))
        raise ToolError(
            f"repository {name!r} does not exist; repositories: {known}", status=404, field="repo"
        )
    return found


def check_path(path: str, field: str = "path") -> str:
    """A repository-relative path: no absolute paths, no '..', no odd characters."""
    if path.startswith("/") or "\\" in path:
        raise ToolError(
            f"path {path!r} must be relative to the repository root, e.g. 'pkg/module.py'",
            status=422,
            field=field,
        )
    if any(part in ("", ".", "..") for part in path.split("/")) or not _PATH.match(path):
        raise ToolError(
            f"path {path!r} is not a valid repository path (letters, digits, '_', '.', "
            "'-' and '/' between names; no '..')",
            status=422,
            field=field,
        )
    if len(path) > 200:
        raise ToolError("path is longer than 200 characters", status=422, field=field)
    return path


def existing_file(repo: Repository, path: str) -> RepoFile:
    found = repo.files.get(check_path(path))
    if found is None:
        raise ToolError(
            f"file {path!r} does not exist in repository {repo.name!r}; use list_files",
            status=404,
            field="path",
        )
    return found


def file_info(file: RepoFile) -> FileInfo:
    return FileInfo(
        path=file.path,
        kind=file_kind(file.path),
        size_bytes=len(file.content.encode()),
        lines=len(file.content.splitlines()),
        sha256=sha256(file.content),
        revision=file.revision,
        updated_at=file.updated_at,
    )


def python_files(repo: Repository, path: str | None) -> dict[str, str]:
    """The .py files to analyse: one named file or the whole repository."""
    if path is not None:
        file = existing_file(repo, path)
        if not file.path.endswith(".py"):
            raise ToolError(f"{path!r} is not a Python file", status=422, field="path")
        return {file.path: file.content}
    return {p: f.content for p, f in sorted(repo.files.items()) if p.endswith(".py")}
