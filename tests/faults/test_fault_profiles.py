"""Profiles: shipped ones load; bad ones fail naming the file, the field and the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from chaosproxy.profiles import ProfileError, load_profile, parse_profile, shipped_profiles

from chaosproxy.faults import FAULT_NAMES

SHIPPED = [
    "ablation-partial",
    "ablation-ratelimit",
    "ablation-timeout",
    "adversarial",
    "agentprop-p2",
    "agentprop-p2-model",
    "fit-v2",
    "lambda0.0",
    "lambda0.1",
    "lambda0.2",
    "lambda0.3",
    "mcp-session",
]


def test_every_promised_profile_is_shipped_and_valid() -> None:
    assert shipped_profiles() == SHIPPED
    for name in SHIPPED:
        profile = load_profile(name)
        assert profile.name == name
        assert profile.description and profile.source


def test_ablations_are_one_fault_at_the_lambda_0_2_rate() -> None:
    for name, fault in [
        ("ablation-timeout", "TransientTimeout"),
        ("ablation-ratelimit", "SoftRateLimit"),
        ("ablation-partial", "PartialResponse"),
    ]:
        profile = load_profile(name)
        assert profile.failure_rate == load_profile("lambda0.2").failure_rate
        assert profile.mix() == {fault: 1.0}


def test_fit_v2_follows_hb_eval_table_2() -> None:
    plan = load_profile("fit-v2").incidents
    assert plan is not None
    assert {k: v.weight for k, v in plan.kinds.items()} == {
        "single": 0.7,
        "compound": 0.2,
        "adversarial": 0.1,
    }
    assert [(b.name, b.weight, b.steps.from_step) for b in plan.timing] == [
        ("early", 0.36, 1),
        ("mid", 0.44, 4),
        ("late", 0.2, 8),
    ]
    # thirds of the task's plan when its length is known
    assert [(b.plan.part, b.plan.parts) for b in plan.timing if b.plan] == [(1, 3), (2, 3), (3, 3)]
    durations = {f.label: f.duration for kind in plan.kinds.values() for f in kind.faults}
    assert durations["f_context"] == "persistent"
    spans = {label: (d.from_step, d.to_step) for label, d in durations.items() if d != "persistent"}
    assert spans == {
        "f_tool": (1, 2),
        "f_stochastic": (2, 3),
        "f_combined": (1, 2),
        "f_cascade": (3, 4),
        "f_adversarial": (1, 1),
    }


def test_a_file_path_loads_and_params_merge_with_defaults(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "failure_rate: 0.5\nweights: {TransientTimeout: 2, SoftRateLimit: 2}\n"
        "params: {TransientTimeout: {delay_s: 3}}\nscope: {domains: [travel]}\n"
    )
    profile = load_profile(str(path))
    assert profile.name == "mine"
    assert profile.mix() == {"TransientTimeout": 0.5, "SoftRateLimit": 0.5}
    assert profile.params.TransientTimeout.delay_s == 3
    assert profile.params.TransientTimeout.status == 504
    assert profile.scope.covers("e", "e", "travel", "x")
    assert not profile.scope.covers("e", "e", "shop", "x")


BAD = [
    (
        "failure_rate: 1.2\nweights: {TransientTimeout: 1}\n",
        "failure_rate",
        "less than or equal to 1",
    ),
    (
        "failure_rate: 0.2\nweights: {TransientTimeout: -0.5}\n",
        "weights.TransientTimeout",
        "greater than or equal to 0",
    ),
    (
        "failure_rate: 0.2\nweights: {TransientTimout: 1}\n",
        "weights.TransientTimout",
        "did you mean 'TransientTimeout'",
    ),
    (
        "failure_rate: 0.2\nweights: {TransientTimeout: 0}\n",
        "<root>",
        "no fault has a positive weight",
    ),
    (
        "params: {SoftRateLimit: {retry_after_s: -1}}\n",
        "params.SoftRateLimit.retry_after_s",
        "greater than or equal to 0",
    ),
    ("params: {SoftRateLimt: {retry_after_s: 1}}\n", "params", "did you mean 'SoftRateLimit'"),
    (
        "params: {TransientTimeout: {dely_s: 1}}\n",
        "params.TransientTimeout.dely_s",
        "Extra inputs are not permitted",
    ),
    (
        "params: {HighLatency: {min_s: 2, max_s: 1}}\n",
        "params.HighLatency",
        "max_s must be >= min_s",
    ),
    ("scope: {stpes: [1, 1]}\n", "scope.stpes", "Extra inputs are not permitted"),
    ("scope: {steps: [3, 1]}\n", "scope.steps", "to_step must be >= from_step"),
    (
        "incidents: {kinds: {single: {weight: 1, faults: [{fault: Nope}]}},"
        " timing: [{name: early, weight: 1, steps: [1, 3]}]}\n",
        "incidents.kinds.single.faults.0.fault",
        "unknown fault 'Nope'",
    ),
    (
        "incidents: {kinds: {single: {weight: 1, faults: [{fault: ServerError}]}},"
        " timing: [{name: late, weight: 1, steps: [8, 15], plan: {part: 4, parts: 3}}]}\n",
        "incidents.timing.0.plan",
        "part must be <= parts",
    ),
    (
        "incidents: {kinds: {single: {weight: 1, faults: [{fault: ServerError}]}},"
        " timing: [{name: early, weight: 1, plan: {part: 1, parts: 3}}]}\n",
        "incidents.timing.0.steps",
        "Field required",
    ),
    ("wieghts: {}\n", "wieghts", "Extra inputs are not permitted"),
]


@pytest.mark.parametrize(("text", "field", "reason"), BAD)
def test_bad_profiles_name_file_field_and_reason(
    tmp_path: Path, text: str, field: str, reason: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as caught:
        load_profile(str(path))
    message = str(caught.value)
    assert f"{path}: field '{field}'" in message
    assert reason in message


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("name: x\nweights: {a: [1,\n", "line 3, column 1: not valid YAML"),
        ("name: x\n  bad indent: 1\n", "line 2, column 13: not valid YAML"),
        ("- just\n- a list\n", "a profile must be a mapping of fields, got list"),
    ],
)
def test_bad_yaml_names_the_line(text: str, reason: str) -> None:
    with pytest.raises(ProfileError, match=reason) as caught:
        parse_profile(text, source="mine.yaml")
    assert str(caught.value).startswith("mine.yaml: ")


def test_unknown_names_and_missing_files() -> None:
    with pytest.raises(ProfileError, match=r"did you mean 'lambda0\.2'"):
        load_profile("lamda0.2")
    with pytest.raises(ProfileError, match="no such profile file"):
        load_profile("/nonexistent/profile.yaml")


def test_catalog_lists_every_fault_of_the_design() -> None:
    design = {
        "TransientTimeout",
        "LostReply",
        "HighLatency",
        "ConnectionReset",
        "ServerError",
        "SoftRateLimit",
        "HardRateLimit",
        "PartialResponse",
        "EmptyResponse",
        "SchemaDrift",
        "StaleData",
        "ContradictoryData",
        "ParameterCorruption",
        "AdversarialPayload",
        "BlockingWindow",
        "CascadingFailure",
    }
    assert design <= set(FAULT_NAMES)
