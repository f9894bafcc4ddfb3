"""Issue 26 #5: `profiles check` and profile loading refuse what would break the proxy:
non-finite numbers (a weight of .inf made every faulted call a 500 with no log line),
weight sums that overflow, ServerError statuses that are not server errors, and `allow:`
entries that `up --forward-port` refuses."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from chaosproxy import Environment
from chaosproxy.cli import main

CASES = {
    "inf-weight": (
        "failure_rate: 1\nweights: {ServerError: .inf}\n",
        "weights.ServerError",
    ),
    "nan-weight": ("failure_rate: 1\nweights: {ServerError: .nan}\n", "weights.ServerError"),
    "overflowing-sum": (
        "failure_rate: 1\nweights: {ServerError: 1.0e308, TransientTimeout: 1.0e308}\n",
        "weights sum to inf",
    ),
    "inf-incident-weight": (
        "incidents:\n  kinds: {a: {weight: .inf, faults: [{fault: ServerError}]}}\n"
        "  timing: [{name: t, weight: 1, steps: 1}]\n",
        "incidents.kinds.a.weight",
    ),
    "overflowing-timing": (
        "incidents:\n  kinds: {a: {weight: 1, faults: [{fault: ServerError}]}}\n"
        "  timing: [{name: t, weight: 1.0e308, steps: 1}, {name: u, weight: 1.0e308, steps: 2}]\n",
        "timing weights sum to inf",
    ),
    "inf-parameter": (
        "failure_rate: 1\nweights: {HighLatency: 1}\nparams: {HighLatency: {delay_s: .inf}}\n",
        "HighLatency",
    ),
    "status-99": (
        "failure_rate: 1\nweights: {ServerError: 1}\nparams: {ServerError: {statuses: [99]}}\n",
        "99 is not a server error status (500-599)",
    ),
    "status-600": (
        "failure_rate: 1\nweights: {ServerError: 1}\n"
        "params: {ServerError: {statuses: [500, 600]}}\n",
        "600 is not a server error",
    ),
    "status-999": (
        "failure_rate: 1\nweights: {CascadingFailure: 1}\n"
        "params: {CascadingFailure: {statuses: [999]}}\n",
        "CascadingFailure.statuses: 999",
    ),
    "allow-bad-port": ("allow: ['api.example.com:99999']\n", "field 'allow'"),
    "allow-not-a-host": ("allow: ['*']\n", "field 'allow'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_profiles_check_refuses_what_breaks_the_proxy(tmp_path: Path, case: str) -> None:
    text, reason = CASES[case]
    path = tmp_path / f"{case}.yaml"
    path.write_text(f"name: {case}\n{text}")
    result = CliRunner().invoke(main, ["profiles", "check", str(path)])
    assert result.exit_code == 2, result.output
    assert str(path) in result.output and reason in result.output


def test_a_sound_profile_with_large_finite_weights_still_passes(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(
        "name: ok\nfailure_rate: 0.5\nweights: {ServerError: 1.0e300, TransientTimeout: 1}\n"
        "params: {ServerError: {statuses: [500, 599]}}\nallow: ['api.example.com:8443']\n"
    )
    result = CliRunner().invoke(main, ["profiles", "check", str(path)])
    assert result.exit_code == 0, result.output


def test_the_control_api_refuses_an_infinite_weight(tmp_path: Path) -> None:
    with Environment(domains=["weather"], profile="lambda0.0", run_dir=tmp_path) as env:
        reply = httpx.put(
            f"{env.control_url}/_chaos/profile",
            content=b'{"profile": {"failure_rate": 1, "weights": {"ServerError": Infinity}}}',
            headers={"Authorization": f"Bearer {env.token}"},
        )
        assert reply.status_code == 400
        bounded = httpx.put(
            f"{env.control_url}/_chaos/profile",
            json={
                "profile": {
                    "failure_rate": 1,
                    "weights": {"ServerError": 1e308, "LostReply": 1e308},
                }
            },
            headers={"Authorization": f"Bearer {env.token}"},
        )
        assert bounded.status_code == 400 and "sum to inf" in bounded.text
