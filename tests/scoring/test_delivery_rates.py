"""`chaosproxy score` prints, with every run, the realised fresh fault rate, the share of
calls affected and each fault's delivered share against the profile's weight (issue 25 #9),
worked by hand on a small constructed run."""

from __future__ import annotations

from typing import Any

from chaosproxy.records import FaultRecord
from chaosproxy.scoring.delivery import rates_lines


def carried(run: Any) -> None:
    """Mark the last call's fault as a running incident applied again (`fresh: false`)."""
    last = run.calls[-1]
    fault = last.fault
    last.fault = FaultRecord.model_validate(
        {**fault.model_dump(), "incident": f"{fault.name}@t/search#2", "fresh": False}
    )


def test_rates_line_worked_by_hand(run: Any, score: Any) -> None:
    run.profiles["lambda0.2"] = {
        "failure_rate": 0.25,
        "weights": {"TransientTimeout": 1.0, "SchemaDrift": 1.0},
    }
    # episode 1, 8 calls: a timeout (fresh), a drift (fresh) carried by the next call
    first = run.episode(success=True)
    first.call(status=504, outcome="timeout", fault="TransientTimeout")
    first.call(fault="SchemaDrift", recoverable=False)
    first.call(fault="SchemaDrift", recoverable=False)
    carried(run)
    first.call().call().call().call().call()
    # episode 2, 4 calls: one more timeout
    second = run.episode(success=True)
    second.call().call(status=504, outcome="timeout", fault="TransientTimeout").call().call()
    (line,) = rates_lines(score(run.build()).results)
    # 12 tool calls. Fresh: 3 (2 timeouts, 1 drift) -> 0.250, Wilson 95 %:
    #   centre (0.25 + 1.96²/24) / (1 + 1.96²/12) = 0.41007 / 1.32013 = 0.3106,
    #   half 1.96·sqrt(0.25·0.75/12 + 1.96²/576) / 1.32013 = 0.2217 -> [0.089, 0.532].
    # Affected: 4 (the carried drift too) -> 0.333, Wilson [0.138, 0.609].
    # Mix over the 3 fresh: timeout 2/3 = 0.667 vs weight 0.5, σ = sqrt(0.25/3) = 0.2887,
    #   (0.667 - 0.5) / 0.2887 = +0.6σ; drift 1/3 = 0.333, -0.6σ.
    assert line == (
        "retry · lambda0.2: fresh fault rate 0.250 [0.089, 0.532] (3 of 12 tool calls), "
        "profile 0.250; affected 0.333 [0.138, 0.609] (4 of 12 tool calls); "
        "delivered mix vs profile weights: SchemaDrift 0.333 vs 0.500 (-0.6σ), "
        "TransientTimeout 0.667 vs 0.500 (+0.6σ)"
    )


def test_score_prints_the_rates_with_every_run(run: Any, tmp_path: Any) -> None:
    from click.testing import CliRunner

    from chaosproxy.cli import main

    run.profiles["lambda0.2"] = {"failure_rate": 0.5, "weights": {"TransientTimeout": 1.0}}
    run.episode(success=True).call(status=504, outcome="timeout", fault="TransientTimeout").call()
    path = run.build()
    result = CliRunner().invoke(main, ["score", str(path)])
    assert result.exit_code == 0, result.output
    assert "Fault rates and mix" in result.output
    assert "fresh fault rate 0.500" in result.output and "affected 0.500" in result.output
    assert "TransientTimeout 1.000 vs 1.000" in result.output
