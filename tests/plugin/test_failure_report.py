"""A failing chaos trial says which faults it met: in its failure report and as JUnit
properties (issue 30). A real inner pytest session (pytester) and a real environment."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

import pytest

from chaosproxy.records import RunConfig

pytestmark = pytest.mark.timeout(300)

FAILING = """
import httpx
import pytest

from chaosproxy.records import RunConfig


@pytest.mark.chaos(profiles=["ablation-ratelimit"], trials=1)
def test_reads_without_retrying(chaos_episode):
    url = chaos_episode.url("travel") + "/tools/get_itinerary"
    codes = [httpx.post(url, json={}, timeout=10).status_code for _ in range(30)]
    assert codes == [200] * 30
"""


def test_a_failed_trial_lists_its_faults_and_records_them_for_junit(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_agent=FAILING)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--junitxml={junit}", "--chaos-domains=travel"
    )
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "chaosproxy faults met (episode" in output
    shown = [line for line in output.splitlines() if "SoftRateLimit -> 429" in line]
    assert shown and all(line.startswith("step ") for line in shown)
    properties = {
        p.get("name"): p.get("value") for p in ElementTree.parse(junit).getroot().iter("property")
    }
    assert int(properties["chaosproxy.faults"]) == len(shown) >= 1
    assert properties["chaosproxy.fault.1"] == shown[0]
    assert properties["chaosproxy.episode"]
    configs = list(pytester.path.rglob("config.json"))
    assert len(configs) == 1
    config = RunConfig.model_validate_json(configs[0].read_text())
    assert config.command[0] == "pytest" and f"--junitxml={junit}" in config.command
    assert config.settings["episodes_planned"] == 1  # one test, one profile, one trial
