"""chaosproxy's pytest plugin: chaos inside the agent tests you already write.

Registered through the `pytest11` entry point; nothing starts unless a test asks for the
`chaos` or `chaos_episode` fixture. See docs/pytest.md for the options, the marker, the
precedence of settings and how pytest-xdist workers share one run directory.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from chaosproxy.plugin.settings import (
    ChaosSettings,
    SettingError,
    Variant,
    default_run_dir,
    resolve,
)

if TYPE_CHECKING:
    from chaosproxy.api import Environment, Episode
    from chaosproxy.plugin.summary import Row
    from chaosproxy.records import EpisodeOutcome, TaskMeta

STATE = pytest.StashKey["ChaosState"]()
REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()
MARKER_HELP = (
    "chaos(profiles=None, trials=None, task=None, schedule=None, schedule_mode='replace'): "
    "run the test under each fault profile, trials times each, in a fresh chaosproxy episode "
    "(the chaos_episode fixture); task: a built-in task id whose initial state the episode "
    "starts from; schedule: a fault schedule (dict, list of faults, or a JSON/YAML path; "
    "docs/schedules.md) in place of the profile's draws ('overlay': on top of them)"
)
MARKER_ARGS = frozenset({"profiles", "trials", "task", "schedule", "schedule_mode"})


# ---- options --------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaosproxy", "chaosproxy: fault injection for agent tests")
    group.addoption(
        "--chaos-profile",
        action="append",
        default=None,
        metavar="NAME",
        help="Fault profile (shipped name or YAML path) for chaos tests; repeatable. "
        "Default: lambda0.2. A test's @pytest.mark.chaos(profiles=...) wins.",
    )
    group.addoption("--chaos-seed", default=None, metavar="N", help="Run seed (default 7).")
    group.addoption(
        "--chaos-trials",
        default=None,
        metavar="K",
        help="Trials per test and profile (default 1); a marker's trials= wins.",
    )
    group.addoption(
        "--chaos-domains",
        action="append",
        default=None,
        metavar="A,B",
        help="Built-in domains to serve (default: all; 'none' with --chaos-upstream only).",
    )
    group.addoption(
        "--chaos-upstream",
        action="append",
        default=None,
        metavar="NAME=URL",
        help="Put your own REST/MCP service behind the proxy under /NAME/; repeatable.",
    )
    group.addoption(
        "--chaos-run-dir",
        default=None,
        metavar="DIR",
        help="Run directory (default: ROOTDIR/.chaosproxy/runs/<time>); must not hold a run.",
    )
    group.addoption(
        "--chaos-min-pass-k",
        default=None,
        metavar="X",
        help="Fail the session when a chaos test's pass^k (k = its trials) is below X, "
        "per test and profile.",
    )
    group.addoption(
        "--chaos-agent",
        default=None,
        metavar="NAME",
        help="Agent label in the run directory (default: pytest).",
    )
    parser.addini("chaos_profile", "default fault profiles, one a line", type="linelist")
    parser.addini("chaos_seed", "run seed", default=None)
    parser.addini("chaos_trials", "trials per test and profile", default=None)
    parser.addini("chaos_domains", "built-in domains to serve", type="args")
    parser.addini("chaos_upstream", "NAME=URL upstreams, one a line", type="linelist")
    parser.addini("chaos_run_dir", "run directory, relative to the rootdir", default=None)
    parser.addini("chaos_min_pass_k", "reliability gate on pass^k", default=None)
    parser.addini("chaos_agent", "agent label in the run directory", default=None)


def _settings(config: pytest.Config) -> ChaosSettings:
    def ini(name: str) -> object:
        value = config.getini(name)
        return value if value not in ("", None, []) else None

    return resolve(
        option_profiles=config.getoption("chaos_profile"),
        ini_profiles=list(config.getini("chaos_profile")),
        option_seed=config.getoption("chaos_seed"),
        ini_seed=ini("chaos_seed"),
        option_trials=config.getoption("chaos_trials"),
        ini_trials=ini("chaos_trials"),
        option_domains=config.getoption("chaos_domains"),
        ini_domains=list(config.getini("chaos_domains")),
        option_upstreams=config.getoption("chaos_upstream"),
        ini_upstreams=list(config.getini("chaos_upstream")),
        option_run_dir=config.getoption("chaos_run_dir"),
        ini_run_dir=str(ini("chaos_run_dir") or "") or None,
        option_min_pass_k=config.getoption("chaos_min_pass_k"),
        ini_min_pass_k=ini("chaos_min_pass_k"),
        option_agent=config.getoption("chaos_agent"),
        ini_agent=str(ini("chaos_agent") or "") or None,
        invocation_dir=config.invocation_params.dir,
        rootdir=config.rootpath,
    )


# ---- session state --------------------------------------------------------------------


class ChaosState:
    """What one pytest process knows: settings, its environment, the tests it recorded.

    Under xdist every worker has its own (and its own Environment); the controller merges
    what the workers report and scores the shared run directory once."""

    def __init__(self, config: pytest.Config, settings: ChaosSettings, run_dir: Path) -> None:
        self.config = config
        self.settings = settings
        self.run_dir = run_dir
        worker = getattr(config, "workerinput", None)
        self.is_worker = worker is not None
        self.workers = int(worker["workercount"]) if worker else _numprocesses(config)
        self.env: Environment | None = None
        self.used = False
        self.tasks: dict[str, dict[str, object]] = {}
        self.trials: dict[str, int] = {}
        self.profiles: dict[str, dict[str, object]] = {}
        self.domains: list[str] = []
        self.episodes = 0
        self.rows: list[Row] = []
        self.failures: list[Row] = []
        self.error: str | None = None

    def profile(self, name: str) -> str:
        """Load a profile (once) and return its name; remembered for config.json."""
        from chaosproxy.api.settings import load_profile

        profile = load_profile(name)
        self.profiles.setdefault(profile.name, profile.model_dump(mode="json"))
        return profile.name

    def start_environment(self) -> Environment:
        from chaosproxy.api import ChaosError, Environment
        from chaosproxy.plugin.recorder import run_config, write_config
        from chaosproxy.records import CONFIG_FILE

        if self.env is not None:
            return self.env
        try:
            for name in self.settings.profiles:
                self.profile(name)
            env = Environment(
                domains=self.settings.domains,
                upstreams=self.settings.upstreams,
                profile=self.settings.profiles[0],
                seed=self.settings.seed,
                run_dir=self.run_dir,
                episode_credentials=True,
            )
            env.start()
        except ChaosError as bad:
            raise pytest.UsageError(f"chaosproxy: {bad}") from bad
        self.env, self.used = env, True
        self.domains = env.services
        if not (self.run_dir / CONFIG_FILE).exists():
            config = run_config(
                self.settings, self.domains, self.profiles, self.settings.trials, self.workers
            )
            write_config(self.run_dir, config)
        return env

    def stop_environment(self) -> None:
        env, self.env = self.env, None
        if env is not None:
            env.close()

    def note_test(self, unit: str, variant: Variant, meta: TaskMeta) -> None:
        self.tasks[unit] = meta.model_dump(mode="json")
        self.trials[unit] = max(self.trials.get(unit, 0), variant.trials)
        self.episodes += 1

    def export(self) -> str:
        from chaosproxy.plugin.recorder import WorkerReport

        report = WorkerReport(
            tasks=self.tasks,
            trials=self.trials,
            profiles=self.profiles,
            domains=self.domains,
            episodes=self.episodes,
        )
        return report.model_dump_json()

    def merge(self, text: str) -> None:
        from chaosproxy.plugin.recorder import WorkerReport

        report = WorkerReport.model_validate_json(text)
        self.used = True
        self.tasks.update(report.tasks)
        for unit, k in report.trials.items():
            self.trials[unit] = max(self.trials.get(unit, 0), k)
        self.profiles.update(report.profiles)
        self.domains = sorted({*self.domains, *report.domains})
        self.episodes += report.episodes

    def finish(self) -> None:
        """Controller: final config.json and tasks.jsonl, then score and apply the gate."""
        if not self.used:
            return
        from chaosproxy.records import EPISODES_FILE, TaskMeta

        if not (self.run_dir / EPISODES_FILE).is_file():
            return
        from chaosproxy.plugin.recorder import run_config, write_config, write_tasks
        from chaosproxy.plugin.summary import gate_failures, rows_from_run  # the scorer

        trials = max(self.trials.values(), default=self.settings.trials)
        command = ["pytest", *self.config.invocation_params.args]
        config = run_config(
            self.settings, self.domains, self.profiles, trials, self.workers, self.episodes, command
        )
        write_config(self.run_dir, config)
        write_tasks(self.run_dir, [TaskMeta.model_validate(t) for t in self.tasks.values()])
        try:
            self.rows = rows_from_run(self.run_dir, self.trials)
        except Exception as failed:
            self.error = f"scoring {self.run_dir} failed: {failed!r}"
            return
        self.failures = gate_failures(self.rows, self.settings.min_pass_k)


def _numprocesses(config: pytest.Config) -> int:
    value = getattr(config.option, "numprocesses", None)
    return int(value) if isinstance(value, int) else 0


def _state(config: pytest.Config) -> ChaosState:
    return config.stash[STATE]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    try:
        settings = _settings(config)
    except SettingError as bad:
        raise pytest.UsageError(str(bad)) from None
    worker = getattr(config, "workerinput", None)
    if worker is not None and "chaos_run_dir" in worker:
        run_dir = Path(str(worker["chaos_run_dir"]))
    elif settings.run_dir is not None:
        run_dir = settings.run_dir
        from chaosproxy.records import EPISODES_FILE

        if (run_dir / EPISODES_FILE).exists():
            raise pytest.UsageError(
                f"--chaos-run-dir {run_dir} already holds a run; choose another or remove it"
            )
    else:
        run_dir = default_run_dir(config.rootpath)  # new: the time and random letters
    state = ChaosState(config, settings, run_dir)
    if config.getoption("chaos_profile") or config.getini("chaos_profile"):
        from chaosproxy.api import ChaosError

        try:
            for name in settings.profiles:
                state.profile(name)
        except ChaosError as bad:
            raise pytest.UsageError(f"--chaos-profile: {bad}") from None
    config.stash[STATE] = state
    if config.pluginmanager.hasplugin("xdist") and worker is None:
        config.pluginmanager.register(XdistController(config), "chaosproxy-xdist")


class XdistController:
    """Hooks that exist only with pytest-xdist: hand the run directory to the workers, and
    collect what each recorded when it goes down."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_configure_node(self, node: object) -> None:
        workerinput = getattr(node, "workerinput")  # noqa: B009 - xdist's WorkerController
        workerinput["chaos_run_dir"] = str(_state(self.config).run_dir)

    def pytest_testnodedown(self, node: object, error: object) -> None:
        output = getattr(node, "workeroutput", None) or {}
        if "chaos" in output:
            _state(self.config).merge(str(output["chaos"]))


# ---- parametrisation -------------------------------------------------------------------


def _variants(state: ChaosState, marker: pytest.Mark | None, where: str) -> list[Variant]:
    from chaosproxy.api import ChaosError
    from chaosproxy.api.verdict import find_task

    kwargs = dict(marker.kwargs) if marker is not None else {}
    unknown = sorted(set(kwargs) - MARKER_ARGS)
    if unknown or (marker is not None and marker.args):
        pytest.fail(
            f"{where}: @pytest.mark.chaos takes only keyword arguments "
            "profiles=, trials=, task=, schedule=, schedule_mode= "
            f"(got {', '.join(unknown) or 'positional arguments'})",
            pytrace=False,
        )
    profiles = kwargs.get("profiles", state.settings.profiles)
    if isinstance(profiles, str):
        profiles = [profiles]
    trials = kwargs.get("trials", state.settings.trials)
    task = kwargs.get("task")
    if not isinstance(trials, int) or isinstance(trials, bool) or trials < 1:
        pytest.fail(f"{where}: chaos marker trials= must be an integer ≥ 1", pytrace=False)
    if not profiles or not all(isinstance(p, str | Path) for p in profiles):
        pytest.fail(f"{where}: chaos marker profiles= must name profiles", pytrace=False)
    try:
        names = [state.profile(str(p)) for p in profiles]
        if task is not None:
            find_task(str(task))
    except ChaosError as bad:
        pytest.fail(f"{where}: {bad}", pytrace=False)
    schedule = _marker_schedule(kwargs.get("schedule"), where)
    mode = kwargs.get("schedule_mode", "replace")
    if mode not in ("replace", "overlay"):
        pytest.fail(
            f"{where}: chaos marker schedule_mode= must be 'replace' or 'overlay'", pytrace=False
        )
    return [
        Variant(
            str(p), name, trial, trials, str(task) if task is not None else None, schedule, mode
        )
        for p, name in zip(profiles, names, strict=True)
        for trial in range(1, trials + 1)
    ]


def _marker_schedule(value: object, where: str) -> str | None:
    """The marker's schedule= checked now (an error names the field) and kept as JSON."""
    if value is None:
        return None
    from chaosproxy.faults.schedule import Schedule, ScheduleError, parse_schedule
    from chaosproxy.replay.files import load_schedule

    try:
        if isinstance(value, Schedule):
            plan = value
        elif isinstance(value, str | Path):
            plan = load_schedule(Path(value))
        else:
            plan = parse_schedule(value, "schedule=")
    except ScheduleError as bad:
        pytest.fail(f"{where}: chaos marker {bad}", pytrace=False)
    return plan.model_dump_json()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("chaos")
    if "chaos_episode" not in metafunc.fixturenames:
        if marker is not None:
            pytest.fail(
                f"{metafunc.definition.nodeid}: @pytest.mark.chaos needs the test to take "
                "the chaos_episode fixture",
                pytrace=False,
            )
        return
    variants = _variants(_state(metafunc.config), marker, metafunc.definition.nodeid)
    metafunc.parametrize("_chaos_variant", variants, ids=[v.id for v in variants], indirect=True)


def unit_of(nodeid: str, variant: Variant) -> str:
    """The test without this plugin's parameter: what every trial and profile share."""
    head, bracket, rest = nodeid.partition("[")
    if not bracket or not rest.endswith("]"):
        return nodeid
    params = re.sub(rf"(^|-){re.escape(variant.id)}(?=-|$)", "", rest[:-1]).strip("-")
    return f"{head}[{params}]" if params else head


# ---- fixtures --------------------------------------------------------------------------


@pytest.fixture
def _chaos_variant(request: pytest.FixtureRequest) -> Variant:
    variant = getattr(request, "param", None)
    if not isinstance(variant, Variant):
        pytest.fail("chaos_episode is parametrised by the chaosproxy plugin only", pytrace=False)
    return variant


@pytest.fixture(scope="session")
def chaos(request: pytest.FixtureRequest) -> Iterator[Environment]:
    """The session's chaosproxy Environment (one per xdist worker)."""
    state = _state(request.config)
    env = state.start_environment()
    try:
        yield env
    finally:
        state.stop_environment()


@pytest.fixture
def chaos_episode(
    request: pytest.FixtureRequest, chaos: Environment, _chaos_variant: Variant
) -> Iterator[Episode]:
    """A fresh episode for this test, profile and trial; recorded and ended afterwards."""
    from chaosproxy.api import ChaosError
    from chaosproxy.plugin.recorder import episode_id, episode_key, task_meta

    state = _state(request.config)
    variant = _chaos_variant
    item = request.node
    unit = unit_of(item.nodeid, variant)
    doc = (getattr(item.obj, "__doc__", None) or "").strip()
    description = doc.splitlines()[0] if doc else unit
    try:
        episode = chaos.episode(
            task=variant.task,
            key=episode_key(unit, variant),
            profile=variant.profile,
            id=episode_id(unit, variant),
            schedule=json.loads(variant.schedule) if variant.schedule else None,
            schedule_mode="overlay" if variant.schedule_mode == "overlay" else "replace",
        )
    except ChaosError as bad:
        pytest.fail(f"chaosproxy: {bad}", pytrace=False)
    meta = task_meta(unit, description, variant)
    state.note_test(unit, variant, meta)
    started = time.time()
    try:
        yield episode
        _record(state, item, episode, unit, variant, started, meta.description, chaos)
    finally:
        episode.end()


def _record(
    state: ChaosState,
    item: pytest.Item,
    episode: Episode,
    unit: str,
    variant: Variant,
    started: float,
    text: str,
    env: Environment,
) -> None:
    from chaosproxy.plugin.recorder import record_episode

    reports = item.stash.get(REPORTS, {})
    call = reports.get("call")
    outcome: EpisodeOutcome
    error: str | None
    if call is None:
        setup = reports.get("setup")
        if setup is not None and setup.skipped:
            return
        outcome, success, error = "infra_error", None, "the test body did not run (setup failed)"
    elif call.skipped and not hasattr(call, "wasxfail"):
        return
    else:
        outcome, success = "completed", bool(call.passed)
        error = None if call.passed else _failure_line(call)
    record = record_episode(
        state.run_dir,
        episode,
        unit=unit,
        nodeid=item.nodeid,
        variant=variant,
        settings=state.settings,
        builtin_domains=env.domains,
        outcome=outcome,
        success=success,
        started_at=started,
        task_text=text,
        error=error,
    )
    meta = state.tasks.get(unit)
    if meta is not None and meta.get("domain") == "-" and record.domain != "-":
        meta["domain"] = record.domain  # a plain test's domain is known once it has called


def _failure_line(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    text = message if isinstance(message, str) else report.longreprtext
    return text.strip().splitlines()[0][:500] if text.strip() else "failed"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    item.stash.setdefault(REPORTS, {})[report.when] = report
    if report.when == "call" and report.failed:
        _explain_failure(item, report)
    return report


def _explain_failure(item: pytest.Item, report: pytest.TestReport) -> None:
    """A failed chaos trial says which faults it met, in its failure report and as JUnit
    properties (`--junitxml`, read from the teardown report), so a CI page shows why."""
    from chaosproxy.api import Episode as LiveEpisode

    episode = getattr(item, "funcargs", {}).get("chaos_episode")
    if not isinstance(episode, LiveEpisode):
        return
    try:
        calls = episode.calls()
    except Exception as unreadable:  # the failure report must not fail with it
        report.sections.append(("chaosproxy faults met", f"(the log was unreadable: {unreadable})"))
        return
    met = [
        f"step {c.step} {c.domain}/{c.tool or c.path}: {c.fault.name} -> {c.status}"
        for c in calls
        if c.fault is not None and c.fault_delivered
    ]
    text = "\n".join(met) if met else "none: the trial met no fault"
    report.sections.append((f"chaosproxy faults met (episode {episode.id})", text))
    item.user_properties.append(("chaosproxy.episode", episode.id))
    item.user_properties.append(("chaosproxy.faults", str(len(met))))
    for number, line in enumerate(met, start=1):
        item.user_properties.append((f"chaosproxy.fault.{number}", line))


# ---- the end of the session --------------------------------------------------------------


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if STATE not in config.stash:
        return
    state = _state(config)
    if state.is_worker:
        workeroutput = getattr(config, "workeroutput", None)
        if workeroutput is not None and state.used:
            workeroutput["chaos"] = state.export()
        return
    state.finish()
    failed = bool(state.failures) or (state.error is not None and state.settings.min_pass_k)
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    if STATE not in config.stash:
        return
    state = _state(config)
    if state.is_worker or not (state.rows or state.error):
        return
    from chaosproxy.plugin.summary import render_rows  # the scorer: imported only when used

    write = terminalreporter.write_line
    terminalreporter.write_sep("=", "chaosproxy")
    if state.rows:
        for line in render_rows(state.rows).splitlines():
            write(line)
    if state.error:
        write(state.error, red=True)
    write(f"run directory: {state.run_dir}  (chaosproxy score / report read it)")
    minimum = state.settings.min_pass_k
    if minimum is None:
        return
    if not state.failures and not state.error:
        write(
            f"reliability gate pass^k >= {minimum:g}: passed ({len(state.rows)} checked)",
            green=True,
        )
        return
    write(f"reliability gate pass^k >= {minimum:g}: FAILED", red=True, bold=True)
    for row in state.failures:
        value = "n/a" if row.pass_k.value is None else f"{row.pass_k.value:.2f}"
        write(f"  {row.test} under {row.profile}: pass^{row.k} = {value}", red=True)
