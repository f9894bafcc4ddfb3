"""`chaosproxy reproduce` end to end on small designs; table cells recomputed from the run's
raw files (episodes.jsonl, calls.jsonl) without the scorer where the definition allows."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chaosproxy.cli import main
from chaosproxy.papers.table import num_ci, pct_ci
from chaosproxy.scoring.results import Results

pytestmark = pytest.mark.timeout(300)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _table(run_dir: Path, paper: str, key: str) -> dict[str, list[str]]:
    with (run_dir / "paper" / f"{paper}-{key}.csv").open() as handle:
        rows = list(csv.reader(handle))
    return {row[0]: row for row in rows[1:]}


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def test_agentprop(tmp_path: Path) -> None:
    out = tmp_path / "ap"
    result = CliRunner().invoke(
        main,
        [
            "reproduce",
            "agentprop",
            "--agent",
            "naive",
            "--agent",
            "robust",
            "--tasks-per-domain",
            "2",
            "--out",
            str(out),
            "--concurrency",
            "8",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Table 4: stage-reach rates" in result.output
    episodes = [e for e in _lines(out / "episodes.jsonl") if e["profile"] == "agentprop-p2"]
    corrupted = {
        c["episode"]
        for c in _lines(out / "calls.jsonl")
        if c.get("fault") and c["fault"]["name"] == "ParameterCorruption" and c["fault_delivered"]
    }
    table4 = _table(out, "agentprop", "table4")
    table5 = _table(out, "agentprop", "table5")
    assert set(table4) == {"naive", "robust"}
    for agent in ("naive", "robust"):
        mine = [e for e in episodes if e["agent"] == agent and e["outcome"] == "completed"]
        s1 = [e for e in mine if e["episode"] in corrupted]
        wrong = [e for e in mine if not e["success"]]
        row = table4[agent]
        assert row[1] == str(len(mine))
        assert row[2] == _pct(len(s1) / len(mine))
        assert row[4] == _pct(len(wrong) / len(mine))
        # P(S3 | S1): wrong answers among the episodes whose call was corrupted.
        if s1:
            assert row[8].startswith(_pct(sum(not e["success"] for e in s1) / len(s1)))
            p2 = table5[agent]
            assert p2[3] == str(len(s1))
            assert p2[4].startswith(_pct(sum(e["success"] for e in s1) / len(s1)))
    assert sum(1 for e in episodes if e["episode"] in corrupted) > 0, "the design corrupted nothing"
    md = (out / "paper" / "agentprop.md").read_text()
    assert "### Table 6: rejection versus recovery per agent" in md


def test_hb_eval_with_the_mock_model(tmp_path: Path) -> None:
    out = tmp_path / "hb"
    result = CliRunner().invoke(
        main,
        [
            "reproduce",
            "hb-eval",
            "--agent",
            "react",
            "--agent",
            "robust",
            "--tasks-per-domain",
            "2",
            "--out",
            str(out),
            "--concurrency",
            "8",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "mock model" in result.output
    episodes = _lines(out / "episodes.jsonl")
    assert {e["agent"] for e in episodes} == {"react", "robust"}
    assert all(e["mock_model"] for e in episodes if e["agent"] == "react")
    table4 = _table(out, "hb-eval", "table4")
    delivery = _table(out, "hb-eval", "delivery")
    received = {
        c["episode"]
        for c in _lines(out / "calls.jsonl")
        if c.get("fault") and c["fault"]["incident"].endswith("@episode") and c["fault_delivered"]
    }
    for agent in ("react", "robust"):
        fit = [e["episode"] for e in episodes if e["agent"] == agent and e["profile"] == "fit-v2"]
        share = sum(episode in received for episode in fit) / len(fit)
        assert share >= 0.95, (agent, share)
        assert table4[agent][-1].startswith(_pct(share))
        assert delivery[agent][1] == "fit-v2"  # the λ0 group plans and draws nothing
        assert delivery[agent][-1].startswith(f"{share:.2f}")
    for agent in ("react", "robust"):
        nominal = [e for e in episodes if e["agent"] == agent and e["profile"] == "lambda0.0"]
        assert table4[agent][1].startswith(_pct(sum(e["success"] for e in nominal) / len(nominal)))
        stressed = [
            e["duration_s"] for e in episodes if e["agent"] == agent and e["profile"] == "fit-v2"
        ]
        assert table4[agent][6] == (
            f"{statistics.fmean(stressed):.2f} ± {statistics.pstdev(stressed):.2f}"
        )
    # Δ_rel, the tier and the tables: one computation, in results.json and in every table
    results = Results.model_validate_json((out / "results.json").read_text())
    tiers = _table(out, "hb-eval", "tiers")
    for summary in results.agents:
        agent = summary.agent
        mine = [e for e in episodes if e["agent"] == agent and e["outcome"] == "completed"]
        sr = {
            p: statistics.fmean(e["success"] for e in mine if e["profile"] == p)
            for p in ("lambda0.0", "fit-v2")
        }
        gap = summary.delta_rel_by_profile["fit-v2"]
        assert gap.value == pytest.approx(sr["lambda0.0"] - sr["fit-v2"])
        assert table4[agent][5] == num_ci(gap)
        tier = summary.tier
        assert tier.profiles == ["fit-v2"], "judged on the fault-injected episodes only"
        assert tiers[agent][1:] == [
            pct_ci(tier.frr),
            num_ci(tier.pei),
            tier.tier or tier.text,
            "fit-v2",
        ]
        assert tiers[agent][1] == table4[agent][3] and tiers[agent][2] == table4[agent][4]
    assert "Cross-domain variance (pp²)" in (out / "paper" / "hb-eval.md").read_text()
    # The same tables again from the run directory alone.
    again = CliRunner().invoke(main, ["reproduce", "hb-eval", "--from", str(out)])
    assert again.exit_code == 0, again.output
    assert _table(out, "hb-eval", "table4") == table4


def test_a_real_model_needs_an_endpoint() -> None:
    result = CliRunner().invoke(main, ["reproduce", "hb-eval", "--model", "gpt-4o"])
    assert result.exit_code == 2 and "--model gpt-4o needs --base-url" in result.output


def test_agentprop_model_driven_uses_the_papers_injection_point(tmp_path: Path) -> None:
    """A model-driven agent gets AgentProp's own injection point: the tool call in the
    model's first reply is rewritten (model calls go through the run's proxy), and S1 is
    whether the call the agent then executed carried the injected value, recomputed here
    from calls.jsonl without the scorer."""
    out = tmp_path / "apm"
    result = CliRunner().invoke(
        main,
        ["reproduce", "agentprop", "--agent", "react", "--tasks-per-domain", "1",
         "--out", str(out), "--concurrency", "8"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    episodes = [e for e in _lines(out / "episodes.jsonl") if e["outcome"] == "completed"]
    assert {e["profile"] for e in episodes} == {"lambda0.0", "agentprop-p2-model"}
    injected = [e for e in episodes if e["profile"] == "agentprop-p2-model"]
    calls = _lines(out / "calls.jsonl")
    carried: set[str] = set()
    for episode in {e["episode"] for e in injected}:
        mine = [c for c in calls if c["episode"] == episode and c["kind"] != "protocol"]
        first = mine[0]
        assert first["kind"] == "model_call" and first["fault"]["name"] == (
            "ModelParameterCorruption"
        )
        effect = first["fault"]["params"]["effect"]
        executed = []
        for call in mine[1:]:
            if call["kind"] == "model_call":
                assert call["fault"] is None, "one injection per episode"
                break
            executed.append(call)
        if any(
            c["tool"] == effect["tool"]
            and (c["arguments"] or {}).get(effect["argument"]) == effect["corrupted"]
            for c in executed
        ):
            carried.add(episode)
    n = len(injected)
    wrong = sum(not e["success"] for e in injected)
    row = _table(out, "agentprop", "table4")["react"]
    assert row[1] == str(n) and row[9] == "model reply (paper's)"
    assert row[2] == _pct(len(carried) / n)
    assert row[4] == _pct(wrong / n)
    table6 = _table(out, "agentprop", "table6")["react"]
    assert table6[1].startswith(_pct(1 - len(carried) / n))  # rejection = 1 − P(S1)
    assert carried, "the react agent executes what the model asks: S1 must hold somewhere"
    scored = CliRunner().invoke(main, ["score", str(out)])
    assert scored.exit_code == 0, scored.output
    assert f"{len(carried)}/{n} executed" in scored.output
