"""`chaosproxy profiles`: list, show and check fault profiles."""

from __future__ import annotations

import json
from typing import Any

import click
import yaml

from chaosproxy.faults import Profile
from chaosproxy.profiles import ProfileError, load_profile, shipped_profiles


def _summary(profile: Profile) -> str:
    if profile.incidents is not None:
        kinds = ", ".join(
            f"{name} {kind.weight:g}" for name, kind in profile.incidents.kinds.items()
        )
        injection = f"one incident per episode ({kinds})"
    elif profile.failure_rate > 0:
        mix = ", ".join(f"{name} {share:.0%}" for name, share in profile.mix().items())
        injection = f"failure rate {profile.failure_rate:g} per call: {mix}"
    else:
        injection = "no faults"
    return injection


def _check_allow(profile: Profile, source: str) -> None:
    """`allow:` as `up --forward-port` reads it: what `up` would refuse fails the check."""
    from chaosproxy.forward.allowlist import AllowError, Allowlist

    try:
        Allowlist(list(profile.allow))
    except AllowError as bad:
        raise ProfileError(f"{source}: field 'allow': {bad}") from bad


def _resolved(profile: Profile) -> dict[str, Any]:
    data: dict[str, Any] = profile.model_dump(mode="json")
    return data


@click.group(invoke_without_command=True)
@click.pass_context
def profiles(ctx: click.Context) -> None:
    """List the shipped fault profiles (or show / check one)."""
    if ctx.invoked_subcommand is not None:
        return
    from chaosproxy.report.fmt import text_table

    rows = [[name, load_profile(name).description] for name in shipped_profiles()]
    click.echo(text_table(["profile", "what it does"], rows, left=2))
    click.echo("\n`chaosproxy profiles show NAME` prints one in full.")


@profiles.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="JSON instead of YAML.")
def show(name: str, as_json: bool) -> None:
    """Print a profile (shipped NAME or a FILE) with every default filled in."""
    try:
        profile = load_profile(name)
    except ProfileError as exc:
        raise click.ClickException(str(exc)) from exc
    data = _resolved(profile)
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), nl=False)


@profiles.command()
@click.argument("file")
def check(file: str) -> None:
    """Validate a profile FILE: exit 0 with a summary, or exit 2 with the error."""
    try:
        profile = load_profile(file)
        _check_allow(profile, file)
    except ProfileError as exc:
        click.echo(str(exc), err=True)
        raise SystemExit(2) from exc
    click.echo(f"ok: {profile.name}: {_summary(profile)}")
    scope = profile.scope.model_dump(exclude_defaults=True)
    if scope:
        click.echo(f"scope: {json.dumps(scope)}")
