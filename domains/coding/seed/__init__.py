"""The seed repositories: each module builds one Repository (visible files plus hidden tests)."""

from __future__ import annotations

from textwrap import dedent

from chaosproxy.domains.coding.state import RepoFile, Repository

SEED_TIME = "2026-02-27T16:40:00Z"


def repository(
    name: str, description: str, owner: str, files: dict[str, str], hidden: dict[str, str]
) -> Repository:
    """Build a repository from dedented sources (leading newline stripped)."""
    return Repository(
        name=name,
        description=description,
        owner=owner,
        updated_at=SEED_TIME,
        files={
            path: RepoFile(path=path, content=_clean(text), updated_at=SEED_TIME)
            for path, text in files.items()
        },
        hidden_tests={path: _clean(text) for path, text in hidden.items()},
    )


def _clean(text: str) -> str:
    return dedent(text).lstrip("\n")
