"""The plugin's settings, resolved once per session with a fixed precedence:

command-line option > ini option (pytest.ini, pyproject.toml, ...) > built-in default;
for one test, the `@pytest.mark.chaos(profiles=..., trials=...)` values win over both.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from chaosproxy.defaults import DEFAULT_SEED
from chaosproxy.errors import ChaosError

DEFAULT_PROFILE = "lambda0.2"
DEFAULT_TRIALS = 1
DEFAULT_AGENT = "pytest"
DEFAULT_RUNS = Path(".chaosproxy") / "runs"


class SettingError(ChaosError, ValueError):
    """A bad plugin option; the message names the option and the value."""


@dataclass(frozen=True)
class ChaosSettings:
    profiles: list[str]
    seed: int
    trials: int
    domains: list[str] | None
    upstreams: dict[str, str]
    run_dir: Path | None
    min_pass_k: float | None
    agent: str


@dataclass(frozen=True)
class Variant:
    """One parametrisation of a chaos test: which profile, which trial, which task."""

    profile: str
    profile_name: str
    trial: int
    trials: int
    task: str | None
    schedule: str | None = None
    """A fault schedule as JSON text (`@pytest.mark.chaos(schedule=...)`), replacing the
    profile's draws; None: the profile draws."""
    schedule_mode: str = "replace"

    @property
    def id(self) -> str:
        return f"{self.profile_name}-t{self.trial}"


def _first(*values: object) -> object:
    for value in values:
        if value not in (None, "", [], ()):
            return value
    return None


def parse_int(name: str, value: object, default: int, minimum: int) -> int:
    if value is None:
        return default
    try:
        number = int(str(value))
    except ValueError:
        raise SettingError(f"{name}: expected an integer, got {value!r}") from None
    if number < minimum:
        raise SettingError(f"{name}: must be at least {minimum}, got {number}")
    return number


def parse_fraction(name: str, value: object) -> float | None:
    if value is None:
        return None
    try:
        number = float(str(value))
    except ValueError:
        raise SettingError(f"{name}: expected a number in [0, 1], got {value!r}") from None
    if not 0.0 <= number <= 1.0:
        raise SettingError(f"{name}: must be in [0, 1], got {number:g}")
    return number


def split_names(values: Sequence[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def resolve(
    *,
    option_profiles: Sequence[str] | None,
    ini_profiles: Sequence[str],
    option_seed: object,
    ini_seed: object,
    option_trials: object,
    ini_trials: object,
    option_domains: Sequence[str] | None,
    ini_domains: Sequence[str],
    option_upstreams: Sequence[str] | None,
    ini_upstreams: Sequence[str],
    option_run_dir: str | None,
    ini_run_dir: str | None,
    option_min_pass_k: object,
    ini_min_pass_k: object,
    option_agent: str | None,
    ini_agent: str | None,
    invocation_dir: Path,
    rootdir: Path,
) -> ChaosSettings:
    """Apply the precedence; relative paths from the command line are taken from the
    invocation directory, from an ini file from the rootdir."""
    profiles = split_names(option_profiles or ini_profiles or [DEFAULT_PROFILE])
    domains_given = split_names(option_domains or ini_domains)
    domains: list[str] | None = domains_given or None
    if domains_given and [name.lower() for name in domains_given] == ["none"]:
        domains = []
    upstreams: dict[str, str] = {}
    for spec in option_upstreams or ini_upstreams:
        name, sep, url = spec.partition("=")
        if not sep:
            raise SettingError(f"--chaos-upstream {spec!r}: expected NAME=URL")
        upstreams[name.strip()] = url.strip()
    if option_run_dir:
        run_dir: Path | None = (invocation_dir / option_run_dir).resolve()
    elif ini_run_dir:
        run_dir = (rootdir / ini_run_dir).resolve()
    else:
        run_dir = None
    agent = str(_first(option_agent, ini_agent) or DEFAULT_AGENT)
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", agent):
        raise SettingError(f"--chaos-agent: use letters, digits and _.- only, got {agent!r}")
    return ChaosSettings(
        profiles=profiles,
        seed=parse_int("--chaos-seed", _first(option_seed, ini_seed), DEFAULT_SEED, 0),
        trials=parse_int("--chaos-trials", _first(option_trials, ini_trials), DEFAULT_TRIALS, 1),
        domains=domains,
        upstreams=upstreams,
        run_dir=run_dir,
        min_pass_k=parse_fraction("--chaos-min-pass-k", _first(option_min_pass_k, ini_min_pass_k)),
        agent=agent,
    )


def default_run_dir(rootdir: Path) -> Path:
    """RUN under ROOTDIR/.chaosproxy/runs/: the time, and a few random letters for two
    sessions that start in the same second."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return (rootdir / DEFAULT_RUNS / f"{stamp}-{secrets.token_hex(2)}").resolve()


_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")


def slug(text: str, limit: int) -> str:
    return _UNSAFE.sub("_", text).strip("_.")[:limit] or "test"
