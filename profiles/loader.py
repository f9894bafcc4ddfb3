"""Reading profiles from YAML: shipped ones by name, any other by path.

Kept apart from the engine, which takes a validated `Profile` and never touches files.
"""

from __future__ import annotations

import difflib
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from chaosproxy.errors import ProfileError
from chaosproxy.faults.profile import Profile
from chaosproxy.yamlfile import YamlFileError, parse_yaml, read_text

PROFILE_PACKAGE = "chaosproxy.profiles"


def shipped_profiles() -> list[str]:
    """Names of the profiles installed with chaosproxy, sorted."""
    root = resources.files(PROFILE_PACKAGE)
    return sorted(
        entry.name.removesuffix(".yaml") for entry in root.iterdir() if entry.name.endswith(".yaml")
    )


def load_profile(name_or_path: str | Path) -> Profile:
    """A shipped profile by name (`lambda0.2`) or a YAML file by path."""
    text = str(name_or_path)
    path = Path(text)
    if path.suffix in {".yaml", ".yml"} or path.exists() or "/" in text:
        try:
            content = read_text(path, "profile")
        except YamlFileError as bad:
            raise ProfileError(str(bad)) from None
        return parse_profile(content, source=str(path), default_name=path.stem)
    resource = resources.files(PROFILE_PACKAGE) / f"{text}.yaml"
    if not resource.is_file():
        names = shipped_profiles()
        close = difflib.get_close_matches(text, names, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ProfileError(
            f"{text}: no shipped profile of that name{hint} (shipped: {', '.join(names)})"
        )
    return parse_profile(
        resource.read_text(encoding="utf-8"), source=f"{text}.yaml", default_name=text
    )


def load_shipped_profile(name: str) -> Profile:
    """A shipped profile by name only: what remote callers (the control API) may ask for.

    Never reads a path, so a client cannot make the proxy open files on its host.
    """
    names = shipped_profiles()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ProfileError(
            f"{name!r}: no shipped profile of that name{hint} (shipped: {', '.join(names)}); "
            "send an inline profile mapping for anything else"
        )
    return load_profile(name)


def parse_profile(text: str, source: str = "<profile>", default_name: str | None = None) -> Profile:
    """Validate YAML text as a profile; errors name `source`, the field and the reason."""
    try:
        data: Any = parse_yaml(text, source)
    except YamlFileError as exc:
        raise ProfileError(str(exc)) from None
    if not isinstance(data, dict):
        raise ProfileError(
            f"{source}: a profile must be a mapping of fields, got {type(data).__name__}"
        )
    if default_name and "name" not in data:
        data["name"] = default_name
    return validate_profile(data, source)


def validate_profile(data: dict[str, Any], source: str = "<profile>") -> Profile:
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(format_validation_error(exc, source)) from exc


def format_validation_error(exc: ValidationError, source: str) -> str:
    lines = []
    for error in exc.errors():
        loc = ".".join(str(part) for part in error["loc"] if part != "[key]")
        message = str(error["msg"]).removeprefix("Value error, ")
        lines.append(f"{source}: field '{loc or '<root>'}': {message}")
    return "\n".join(lines)
