"""Repository browsing and editing tools: list, read, find, write, patch, delete."""

from __future__ import annotations

import ast
import difflib
from typing import Annotated

from chaosproxy.domains.coding.access import (
    MAX_FILE_CHARS,
    WRITABLE_SUFFIXES,
    check_path,
    existing_file,
    file_info,
    python_files,
    repository,
)
from chaosproxy.domains.coding.domain import domain
from chaosproxy.domains.coding.models import (
    DeleteResult,
    FileContent,
    FileList,
    PatchResult,
    RepositoryList,
    RepoSummary,
    SymbolLocation,
    SymbolResult,
    WriteResult,
)
from chaosproxy.domains.coding.seed.world import make_default_state
from chaosproxy.domains.coding.state import CodingState, RepoFile, Repository
from chaosproxy.domains.kit import CriticalArg, ToolError
from pydantic import Field

_WORLD = make_default_state()
REPO_NAMES = sorted(_WORLD.repositories)
MODULE_PATHS = sorted(
    {p for r in _WORLD.repositories.values() for p in r.files if p.endswith(".py")}
)
SYMBOLS = sorted(
    {
        node.name
        for r in _WORLD.repositories.values()
        for p, f in r.files.items()
        if p.endswith(".py")
        for node in ast.walk(ast.parse(f.content))
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
    }
)

RepoArg = Annotated[
    str, Field(description="Repository name, e.g. 'authsvc' (see list_repositories)")
]
PathArg = Annotated[
    str, Field(description="Repository-relative file path, e.g. 'authsvc/users.py'")
]
REPO_CRITICAL = CriticalArg.choice(REPO_NAMES)
PATH_CRITICAL = CriticalArg.choice(MODULE_PATHS)


@domain.tool()
def list_repositories(state: CodingState) -> RepositoryList:
    """List the repositories you can work on, with their description and owner."""
    summaries = [
        RepoSummary(
            name=r.name,
            description=r.description,
            owner=r.owner,
            default_branch=r.default_branch,
            language=r.language,
            file_count=len(r.files),
            revision=r.revision,
            updated_at=r.updated_at,
        )
        for r in sorted(state.repositories.values(), key=lambda r: r.name)
    ]
    return RepositoryList(repositories=summaries, total=len(summaries))


@domain.tool(critical={"repo": REPO_CRITICAL})
def list_files(
    state: CodingState,
    repo: RepoArg,
    prefix: Annotated[
        str | None, Field(description="Only paths starting with this, e.g. 'tests/'")
    ] = None,
) -> FileList:
    """List a repository's files (path, kind, size, sha256, revision)."""
    found = repository(state, repo)
    files = [
        file_info(f)
        for p, f in sorted(found.files.items())
        if prefix is None or p.startswith(prefix)
    ]
    return FileList(
        repo=found.name, default_branch=found.default_branch, files=files, total=len(files)
    )


@domain.tool(critical={"repo": REPO_CRITICAL, "path": PATH_CRITICAL})
def read_file(state: CodingState, repo: RepoArg, path: PathArg) -> FileContent:
    """Read one file of a repository."""
    file = existing_file(repository(state, repo), path)
    return FileContent(repo=repo, content=file.content, **file_info(file).model_dump())


@domain.tool(critical={"repo": REPO_CRITICAL, "name": CriticalArg.choice(SYMBOLS)})
def find_symbol(
    state: CodingState,
    repo: RepoArg,
    name: Annotated[str, Field(description="A function, class or variable name, e.g. 'calcTotal'")],
) -> SymbolResult:
    """Where a name is defined and used in the repository's Python files (parsed, not grepped)."""
    if not name.isidentifier():
        raise ToolError(f"{name!r} is not a Python identifier", status=422, field="name")
    found = repository(state, repo)
    definitions: list[SymbolLocation] = []
    references: list[SymbolLocation] = []
    for path, source in python_files(found, None).items():
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        lines = source.splitlines()
        for node in ast.walk(tree):
            kind = _symbol_kind(node, name)
            if kind is not None:
                line = getattr(node, "lineno", 1)
                target = references if kind == "reference" else definitions
                target.append(
                    SymbolLocation(path=path, line=line, kind=kind, code=lines[line - 1].strip())
                )
    definitions.sort(key=lambda s: (s.path, s.line))
    references.sort(key=lambda s: (s.path, s.line))
    return SymbolResult(
        repo=repo,
        name=name,
        definitions=definitions,
        references=references,
        total=len(definitions) + len(references),
    )


def _symbol_kind(node: ast.AST, name: str) -> str | None:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
        return "function"
    if isinstance(node, ast.ClassDef) and node.name == name:
        return "class"
    if isinstance(node, ast.Name) and node.id == name:
        return "assignment" if isinstance(node.ctx, ast.Store) else "reference"
    if isinstance(node, ast.Attribute) and node.attr == name:
        return "reference"
    if isinstance(node, ast.ImportFrom) and any(
        a.name == name or a.asname == name for a in node.names
    ):
        return "import"
    return None


def _touch(state: CodingState, repo: Repository) -> None:
    repo.revision += 1
    repo.updated_at = state.now


@domain.tool(critical={"repo": REPO_CRITICAL, "path": PATH_CRITICAL})
def write_file(
    state: CodingState,
    repo: RepoArg,
    path: PathArg,
    content: Annotated[str, Field(description="The file's complete new content")],
) -> WriteResult:
    """Create a file or replace its whole content. Writing identical content changes nothing."""
    found = repository(state, repo)
    check_path(path)
    if not path.endswith(WRITABLE_SUFFIXES):
        raise ToolError(
            f"cannot write {path!r}: allowed file types are {', '.join(WRITABLE_SUFFIXES)}",
            status=422,
            field="path",
        )
    if len(content) > MAX_FILE_CHARS:
        raise ToolError(
            f"content is {len(content)} characters; the limit is {MAX_FILE_CHARS}",
            status=422,
            field="content",
        )
    current = found.files.get(path)
    changed = current is None or current.content != content
    if current is None:
        current = found.files[path] = RepoFile(path=path, content=content, updated_at=state.now)
    elif changed:
        current.content, current.revision, current.updated_at = (
            content,
            current.revision + 1,
            state.now,
        )
    if changed:
        _touch(state, found)
    return WriteResult(
        repo=repo,
        path=path,
        created=current.revision == 1 and changed,
        changed=changed,
        file=file_info(current),
        repo_revision=found.revision,
    )


@domain.tool(idempotent=False, critical={"repo": REPO_CRITICAL, "path": PATH_CRITICAL})
def apply_patch(
    state: CodingState,
    repo: RepoArg,
    path: PathArg,
    find: Annotated[
        str, Field(description="Exact text to replace; must occur exactly once in the file")
    ],
    replace: Annotated[str, Field(description="The replacement text")],
) -> PatchResult:
    """Edit a file by replacing one exact, unique piece of text (read the file first)."""
    found = repository(state, repo)
    file = existing_file(found, path)
    if not find:
        raise ToolError("find must not be empty", status=422, field="find")
    count = file.content.count(find)
    if count != 1:
        problem = "was not found" if count == 0 else f"occurs {count} times"
        raise ToolError(
            f"the text to replace {problem} in {path!r}; read the file again and give a "
            "unique, exact excerpt",
            status=409,
            field="find",
        )
    before = file.content
    file.content = before.replace(find, replace, 1)
    file.revision += 1
    file.updated_at = state.now
    _touch(state, found)
    diff = "".join(
        difflib.unified_diff(
            before.splitlines(True), file.content.splitlines(True), f"a/{path}", f"b/{path}", n=1
        )
    )
    return PatchResult(
        repo=repo,
        path=path,
        replacements=1,
        first_changed_line=before[: before.index(find)].count("\n") + 1,
        diff=diff[:4000],
        file=file_info(file),
        repo_revision=found.revision,
    )


@domain.tool(idempotent=False, critical={"repo": REPO_CRITICAL, "path": PATH_CRITICAL})
def delete_file(state: CodingState, repo: RepoArg, path: PathArg) -> DeleteResult:
    """Delete a file from the repository."""
    found = repository(state, repo)
    file = existing_file(found, path)
    del found.files[file.path]
    _touch(state, found)
    return DeleteResult(repo=repo, path=file.path, deleted=True, repo_revision=found.revision)
