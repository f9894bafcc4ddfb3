"""The HTML report: one self-contained file, Jinja2-rendered, whose sections follow the run's
shape, and whose plots render in a real headless Chromium (screenshots kept when
CHAOSPROXY_REPORT_SHOTS names a directory)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from click.testing import CliRunner
from runshapes import ONE_TRIAL, QUICKSTART, SMALL, Shape, build_run

from chaosproxy.cli import main
from chaosproxy.faults.schedule import parse_schedule
from chaosproxy.records import EPISODES_FILE, EpisodeRecord, read_jsonl
from chaosproxy.replay.files import ShrunkSchedule, append_shrunk, schedule_document
from chaosproxy.replay.hunt import pattern
from chaosproxy.report.figures import EXCLUDES
from chaosproxy.report.fmt import excludes_zero
from chaosproxy.report.table import hygiene_applies
from chaosproxy.scoring import score_runs
from chaosproxy.scoring.rundir import iter_calls
from chaosproxy.scoring.synthetic import write_synthetic_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# CI installs Chromium (.ci/run): there a missing browser fails the test instead of skipping it.
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="chromium not installed (apt-get install chromium)",
)


class _Page(HTMLParser):
    """Ids, section ids, links and the figures' JSON of one report."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.sections: list[str] = []
        self.links: list[str] = []
        self.figures: dict[str, dict[str, object]] = {}
        self._figure: str | None = None
        self._data: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "section":
            self.sections.append(str(a["id"]))
        if tag == "a" and a.get("href"):
            self.links.append(str(a["href"]))
        if tag == "script" and a.get("class") == "figure":
            self._figure, self._data = str(a["data-plot"]), []

    def handle_data(self, data: str) -> None:
        if self._figure is not None:
            self._data.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._figure is not None:
            self.figures[self._figure] = json.loads("".join(self._data))
            self._figure = None


def _report(tmp_path: Path, shape: Shape, name: str) -> tuple[Path, Path, _Page]:
    run_dir = tmp_path / name
    build_run(run_dir, shape)
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    page = _Page()
    target = run_dir / "report.html"
    page.feed(target.read_text(encoding="utf-8"))
    return run_dir, target, page


def _points(trace: dict[str, object]) -> int:
    xs = trace.get("x") or []
    assert isinstance(xs, list)
    return sum(1 for x in xs if x is not None)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, _Page]:
    return _report(tmp_path_factory.mktemp("small"), SMALL, "small")


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, _Page]:
    return _report(tmp_path_factory.mktemp("quickstart"), QUICKSTART, "quickstart")


def test_report_is_self_contained_and_opens_with_its_configuration(
    small: tuple[Path, Path, _Page],
) -> None:
    _, target, page = small
    text = target.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=", text), "no external scripts: it must open offline"
    assert page.sections[:3] == ["config", "verdict", "headline"]
    config = text[text.index('id="config"') : text.index('id="verdict"')]
    for shown in (
        "chaosproxy run --agent=naive --agent=robust --trials 3",  # the command line
        "2026-09-21 14:13 UTC",  # created_at 1 790 000 000
        "<dd>7</dd>",  # seed
        "2 agents × 4 tasks × 2 ε × 2 profiles × 3 trials = 96 episodes",
        "chaosproxy 0.1.0, pydantic 2.11",
        "lambda0.2",
    ):
        assert shown in config, shown
    toc = [link for link in page.links if link.startswith("#")][: len(page.sections)]
    assert [t[1:] for t in toc] == page.sections, "the contents list every section, in order"
    assert "24/24" in text  # evaluable / total per group: 4 tasks × 2 ε × 3 trials


def test_sections_follow_the_run_shape(
    small: tuple[Path, Path, _Page], quickstart: tuple[Path, Path, _Page]
) -> None:
    small_dir, _, s = small
    quick_dir, _, q = quickstart
    # two ε levels and k_max 3: a surface per agent and the pass^k curves
    assert {"plot-surface-0", "plot-surface-1", "plot-pass-k", "plot-forest"} == set(s.figures)
    # one ε level: no surface heat map, "insufficient data" in its place
    assert set(q.figures) == {"plot-pass-k", "plot-forest"}
    assert "domains" in q.sections and "domains" not in s.sections  # one domain: no table
    for run_dir, page in ((small_dir, s), (quick_dir, q)):
        assert "corruption" not in page.sections, "no corruption profile: section hidden"
        results = score_runs([run_dir]).results
        applies = any(hygiene_applies(g) for g in results.groups)
        assert ("hygiene" in page.sections) == applies, "hygiene shown when there is any"
        assert {"tasks", "episodes", "comparisons", "recovery"} <= set(page.sections)


def test_insufficient_data_instead_of_misleading_plots(
    tmp_path: Path, quickstart: tuple[Path, Path, _Page]
) -> None:
    _, target, _ = quickstart
    text = target.read_text(encoding="utf-8")
    surface = text[text.index('id="surface"') : text.index('id="pass-k"')]
    assert "Insufficient data." in surface and "1 ε level and 2 λ levels" in surface
    _, one_target, one = _report(tmp_path, ONE_TRIAL, "one-trial")
    assert "plot-pass-k" not in one.figures and "plot-surface-0" not in one.figures
    one_text = one_target.read_text(encoding="utf-8")
    assert "each task ran once (k_max = 1)" in one_text


def test_no_plot_from_one_point_and_pass_k_labelled(
    small: tuple[Path, Path, _Page], quickstart: tuple[Path, Path, _Page]
) -> None:
    for _, _, page in (small, quickstart):
        for name, figure in page.figures.items():
            traces = figure["data"]
            assert isinstance(traces, list)
            drawn = [t for t in traces if t.get("type") == "scatter" and _points(t)]
            if name == "plot-pass-k":
                assert drawn and all(_points(t) >= 2 for t in drawn), "a curve needs two k"
                names = {t.get("name") for t in traces}
                assert "pass^k: all k trials succeed (solid, 95% CI)" in names
                assert "pass@k: at least one of k succeeds (dotted)" in names
            if name == "plot-forest":
                assert sum(_points(t) for t in drawn) >= 2
            if name.startswith("plot-surface"):
                z = [v for t in traces for row in t["z"] for v in row if v is not None]
                assert len(z) >= 4, "a surface has at least 2 ε × 2 λ measured cells"


def test_forest_plot_marks_the_intervals_that_exclude_zero(
    quickstart: tuple[Path, Path, _Page],
) -> None:
    run_dir, _, page = quickstart
    results = score_runs([run_dir]).results
    measured = [
        c for c in results.comparisons if c.diff.value is not None and c.diff.low is not None
    ]
    figure = page.figures["plot-forest"]
    traces = {t["name"]: t for t in figure["data"]}  # type: ignore[index, union-attr]
    excluded = traces["95% CI excludes 0"]
    included = traces["95% CI includes 0"]
    assert excluded["marker"]["color"] == EXCLUDES
    assert len(excluded["y"]) == sum(excludes_zero(c.diff) for c in measured) > 0
    assert len(included["y"]) == sum(not excludes_zero(c.diff) for c in measured) > 0


def test_every_episode_link_opens_a_file(quickstart: tuple[Path, Path, _Page]) -> None:
    _, target, page = quickstart
    files = [link for link in page.links if not link.startswith("#")]
    assert len(files) == 2 * 768, "journal and stdout for every episode"
    for link in files[:50] + files[-50:]:
        assert (target.parent / unquote(link)).is_file(), link
    anchors = [link[1:] for link in page.links if link.startswith("#task-")]
    assert len(anchors) == 64 and all(anchor in page.ids for anchor in anchors)


def test_output_elsewhere_keeps_links_working(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    write_synthetic_run(run_dir, calls=200, tasks=2, trials=2, journals=True)
    target = tmp_path / "out" / "elsewhere.html"
    target.parent.mkdir()
    result = CliRunner().invoke(main, ["report", str(run_dir), "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert target.stat().st_size > 1_000_000 and not (run_dir / "report.html").exists()
    page = _Page()
    page.feed(target.read_text(encoding="utf-8"))
    journals = [link for link in page.links if link.endswith("journal.json")]
    assert journals and all((target.parent / unquote(j)).is_file() for j in journals)
    assert "not recorded" in target.read_text(encoding="utf-8"), "old run: no command line"


def test_report_of_a_broken_run_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code != 0 and "missing" in result.output


def _chromium(target: Path, profile: Path, *args: str, url_suffix: str = "") -> str:
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--hide-scrollbars",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=15000",
        *args,
        target.resolve().as_uri() + url_suffix,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout


def _figure_doms(dom: str) -> dict[str, str]:
    """The rendered markup of each plot, by its div id."""
    starts = [
        (m.start(), m.group(1))
        for m in re.finditer(r'<div class="plotly-graph-div[^"]*" id="([^"]+)"', dom)
    ]
    out = {}
    for index, (start, name) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(dom)
        out[name] = dom[start:end]
    return out


@needs_chromium
@pytest.mark.parametrize("shape", ["small", "quickstart"])
def test_screenshot_in_headless_chromium(
    shape: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    _, target, page = request.getfixturevalue(shape)
    dom = _chromium(target, tmp_path / "profile", "--dump-dom")
    drawn = _figure_doms(dom)
    assert set(drawn) == set(page.figures), "every plot drawn, and only those"
    for name, markup in drawn.items():
        assert 'class="main-svg"' in markup, f"{name} rendered by plotly.js"
        points = len(re.findall(r'class="point[ "]', markup))
        if name == "plot-forest":
            assert "95% CI excludes 0" in markup and "95% CI includes 0" in markup
            assert "rgb(192, 57, 43)" in markup, "excluding intervals drawn in their colour"
            assert points >= 2
        if name == "plot-pass-k":
            assert points >= 4, "each agent's curve has a point per k"
        if name.startswith("plot-surface"):
            assert re.search(r'class="hm"|class="heatmaplayer', markup)
    for section in page.sections:
        assert f'id="{section}"' in dom
    assert "chaosproxy run --agent=naive" in dom, "run configuration shown"
    first_task = next(link for link in page.links if link.startswith("#task-"))
    linked = _chromium(target, tmp_path / "profile", "--dump-dom", url_suffix=first_task)
    assert re.search(rf'<details id="{re.escape(first_task[1:])}" class="task" open', linked), (
        "a link from the matrix opens that task's episodes"
    )
    shot = tmp_path / f"{shape}.png"
    _chromium(target, tmp_path / "profile", "--window-size=1280,2400", f"--screenshot={shot}")
    assert shot.stat().st_size > 50_000
    keep = os.environ.get("CHAOSPROXY_REPORT_SHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)


RATE_2ND = "SoftRateLimit hits the 2nd call"
SHRUNK = [
    ("travel-00", "naive", [("travel/search", 2, "SoftRateLimit")], RATE_2ND),
    ("travel-01", "naive", [("travel/book", 2, "SoftRateLimit")], RATE_2ND),
    (
        "travel-01",
        "robust",
        [("travel/book", 1, "PartialResponse"), ("travel/book", 2, "SoftRateLimit")],
        "PartialResponse hits the 1st call, then SoftRateLimit hits the 2nd call of the same tool",
    ),
]


@pytest.fixture(scope="module")
def shrunk(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, _Page]:
    """A run whose shrink/hunt results were recorded in schedules/shrunk.jsonl."""
    base = tmp_path_factory.mktemp("shrunk")
    run_dir = base / "shrunk"
    build_run(run_dir, SMALL)
    rows = []
    for task, agent, faults, group in SHRUNK:
        schedule = parse_schedule([{"tool": t, "call": n, "fault": f} for t, n, f in faults])
        rows.append(
            ShrunkSchedule(
                source="hunt",
                agent=agent,
                task_id=task,
                domain="travel",
                profile="lambda0.0",
                seed=7,
                schedule=schedule_document(schedule),
                started_from=len(faults),
                runs=5,
                verdict="task failed (verifier: goal not met)",
                group=pattern(schedule)[0],
                where=pattern(schedule)[1],
                created_at=1.0,
            )
        )
        assert rows[-1].group == group
    append_shrunk(run_dir, rows)
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    page = _Page()
    target = run_dir / "report.html"
    page.feed(target.read_text(encoding="utf-8"))
    return run_dir, target, page


def _schedule_blocks(html: str) -> list[tuple[str, str]]:
    """(schedule JSON, command) of every schedule block, in page order."""
    found = re.findall(
        r'<details class="schedule"><summary>[^<]*</summary><pre>(.*?)</pre><code>(.*?)</code>',
        html,
        flags=re.S,
    )
    return [(unescape(body), unescape(command)) for body, command in found]


def test_failed_faulted_episodes_show_their_schedule_and_the_shrunk_ones_are_listed(
    shrunk: tuple[Path, Path, _Page],
) -> None:
    run_dir, target, page = shrunk
    text = target.read_text(encoding="utf-8")
    assert "schedules" in page.sections and "#schedules" in page.links
    listed = text[text.index('id="schedules"') : text.index('id="tasks"')]
    assert listed.count('<div class="shrunk-group">') == 2  # two patterns, three schedules
    assert "fails when SoftRateLimit hits the 2nd call</h3>" in listed
    assert "seen on: travel/search; travel/book" in listed
    assert "call 1 of travel/book: PartialResponse; call 2 of travel/book: SoftRateLimit" in listed
    episodes = text[text.index('id="episodes"') :]
    blocks = _schedule_blocks(episodes)
    failed_faulted = {
        r.episode
        for r in read_jsonl(run_dir / EPISODES_FILE, EpisodeRecord)
        if r.success is False
        and any(c.fault for c in iter_calls(run_dir) if c.episode == r.episode)
    }
    assert failed_faulted and len(blocks) == len(failed_faulted)
    for body, command in blocks[:3]:
        words = shlex.split(command)
        assert words[:3] == ["chaosproxy", "shrink", str(run_dir)]
        shown = CliRunner().invoke(main, ["schedule", words[2], words[3], "--json"])
        assert shown.exit_code == 0, shown.output
        assert json.loads(body) == json.loads(shown.output), "the received schedule, as printed"
        assert parse_schedule(json.loads(body)).faults, "a document --schedule accepts"
    for body, command in _schedule_blocks(listed):
        assert parse_schedule(json.loads(body)).faults
        assert "--schedule minimal.json" in command


@needs_chromium
def test_schedules_render_in_headless_chromium(
    shrunk: tuple[Path, Path, _Page], tmp_path: Path
) -> None:
    _, target, _ = shrunk
    dom = _chromium(target, tmp_path / "profile", "--dump-dom", url_suffix="#schedules")
    assert '<section id="schedules">' in dom
    assert dom.count('<details class="schedule">') >= 4  # 3 listed, and the episodes'
    assert "fails when PartialResponse hits the 1st call, then SoftRateLimit" in dom
    shot = tmp_path / "schedules.png"
    _chromium(
        target,
        tmp_path / "profile",
        "--window-size=1280,2400",
        f"--screenshot={shot}",
    )
    keep = os.environ.get("CHAOSPROXY_REPORT_SHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    assert shot.stat().st_size > 50_000
