"""`chaosproxy profiles`, `profiles show`, `profiles check` through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from chaosproxy.profiles import load_profile, shipped_profiles
from click.testing import CliRunner

from chaosproxy.cli import main


def test_list_shows_every_profile_with_its_description() -> None:
    result = CliRunner().invoke(main, ["profiles"])
    assert result.exit_code == 0, result.output
    flowing = " ".join(result.output.split())  # descriptions wrap between words
    for name in shipped_profiles():
        assert f"{name} {' '.join(load_profile(name).description.split())}" in flowing


def test_show_prints_the_resolved_profile_as_yaml_and_json() -> None:
    runner = CliRunner()
    shown = runner.invoke(main, ["profiles", "show", "lambda0.2"])
    assert shown.exit_code == 0, shown.output
    data = yaml.safe_load(shown.output)
    assert data["failure_rate"] == 0.175
    assert data["weights"]["SoftRateLimit"] == 0.25
    assert data["params"]["SoftRateLimit"]["retry_after_s"] == 1
    as_json = runner.invoke(main, ["profiles", "show", "fit-v2", "--json"])
    assert json.loads(as_json.output)["incidents"]["kinds"]["single"]["weight"] == 0.7


def test_show_unknown_profile_fails_with_a_suggestion() -> None:
    result = CliRunner().invoke(main, ["profiles", "show", "lambda0.25"])
    assert result.exit_code == 1
    assert "no shipped profile" in result.output and "did you mean" in result.output


def test_check_good_and_bad_files(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("failure_rate: 0.1\nweights: {SoftRateLimit: 1}\nscope: {domains: [travel]}\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("failure_rate: 0.1\nweights: {SoftRateLimit: -1}\n")
    runner = CliRunner()
    ok = runner.invoke(main, ["profiles", "check", str(good)])
    assert ok.exit_code == 0, ok.output
    assert "ok: good: failure rate 0.1 per call: SoftRateLimit 100%" in ok.output
    assert '"domains": ["travel"]' in ok.output
    failed = runner.invoke(main, ["profiles", "check", str(bad)])
    assert failed.exit_code == 2
    assert f"{bad}: field 'weights.SoftRateLimit'" in failed.output


def test_check_rejects_a_route_that_is_not_a_method_and_a_path(tmp_path: Path) -> None:
    for key, problem in [("GETT /a", "not an HTTP method"), ("nospace", "not an HTTP method")]:
        path = tmp_path / "routes.yaml"
        path.write_text(yaml.safe_dump({"routes": {"shop": {key: "tool"}}}), encoding="utf-8")
        result = CliRunner().invoke(main, ["profiles", "check", str(path)])
        assert result.exit_code == 2, result.output
        assert f"route '{key}' of upstream 'shop': {problem}" in result.output
        assert "'METHOD /path/{param}'" in result.output and "GET, PUT, POST" in result.output
    path.write_text(yaml.safe_dump({"routes": {"shop": {"get /a/{id}": "t"}}}), encoding="utf-8")
    assert CliRunner().invoke(main, ["profiles", "check", str(path)]).exit_code == 0
