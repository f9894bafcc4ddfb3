"""Reading a user's YAML file (a profile, a grid) without tracebacks or long waits.

Every refusal is a `YamlFileError` naming the file and the reason: not a regular file (a
directory, a FIFO: never opened, so never waited on), too large, not UTF-8, not YAML,
nested too deep, or a key given twice (YAML would silently keep the last one).
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode

from chaosproxy.errors import ChaosError

MAX_FILE_BYTES = 1024 * 1024
"""A profile or grid is a few KiB; a bigger file is refused before it is read."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and lists (a profile needs about 6)."""


class YamlFileError(ChaosError, ValueError):
    """A file that cannot be read as YAML; the message names the file and the reason."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def read_text(path: Path, what: str, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file `path`; `what` ("profile") names it in errors."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise YamlFileError(f"{path}: no such {what} file") from None
    except OSError as bad:
        raise YamlFileError(f"{path}: cannot read the {what} file: {bad.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise YamlFileError(f"{path}: is {_kind(info.st_mode)}, not a {what} file")
    if info.st_size > max_bytes:
        raise YamlFileError(
            f"{path}: {info.st_size} bytes; a {what} file is at most {max_bytes} bytes"
        )
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as bad:
        raise YamlFileError(f"{path}: cannot read the {what} file: {bad.strerror}") from None
    if len(data) > max_bytes:
        raise YamlFileError(f"{path}: a {what} file is at most {max_bytes} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as bad:
        raise YamlFileError(
            f"{path}: not UTF-8 text (byte 0x{data[bad.start]:02x} at offset {bad.start})"
        ) from None


_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when PyYAML was built with it: ~20× faster than the pure-Python one."""


class _StrictLoader(_Base):
    """A safe loader that refuses a key given twice in one mapping."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:
                continue  # an unhashable key: the constructor reports it
            if duplicate:
                raise yaml.MarkedYAMLError(
                    problem=f"key {key!r} is given twice", problem_mark=key_node.start_mark
                )
            seen.add(key)
        result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return result


def _check_depth(text: str) -> None:
    """Refuse nesting past MAX_DEPTH from the parser's events, before anything recursive
    (composing a node tree) runs on it."""
    depth = 0
    for event in yaml.parse(text, Loader=_Base):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise yaml.MarkedYAMLError(
                    problem=f"nested more than {MAX_DEPTH} levels deep",
                    problem_mark=event.start_mark,  # type: ignore[arg-type]
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def parse_yaml(text: str, source: str) -> Any:
    """YAML text as data; errors name `source`, the line and column, and the problem."""
    try:
        _check_depth(text)
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader: no arbitrary objects
    except yaml.MarkedYAMLError as bad:
        mark = bad.problem_mark or bad.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise YamlFileError(f"{source}: {where}not valid YAML ({bad.problem})") from None
    except yaml.YAMLError as bad:
        raise YamlFileError(f"{source}: not valid YAML ({bad})") from None
    except RecursionError:
        raise YamlFileError(f"{source}: not valid YAML (nested too deep)") from None
