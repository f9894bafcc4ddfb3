"""Everything the HTML template shows, worked out in Python: which sections apply, their
tables, plots and the per-episode panel. The template only lays it out."""

from __future__ import annotations

import datetime as dt
import shlex
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from chaosproxy.faults.schedule import parse_schedule
from chaosproxy.records import CONFIG_FILE, TASKS_FILE, RunConfig, TaskMeta, read_jsonl
from chaosproxy.replay.files import SHRUNK_FILE, dump_schedule, read_shrunk
from chaosproxy.report import figures, table
from chaosproxy.report.episodes import EpisodeRow, TaskEpisodes, by_task, episode_rows, task_anchor
from chaosproxy.report.figures import Plot
from chaosproxy.report.fmt import NA, est, excludes_zero, show_ks, signed
from chaosproxy.scoring.results import Results
from chaosproxy.scoring.tier import CAVEAT


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    left: int = 1
    emphasis: list[bool] = field(default_factory=list)
    """Rows to draw in bold (a comparison whose interval excludes 0)."""
    wrap: bool = False
    """Long text cells wrap (descriptions) instead of widening the table."""
    folded: str | None = None
    """When set, the table sits closed under this summary (it repeats a plot)."""


@dataclass
class Section:
    id: str
    title: str
    tables: list[Table] = field(default_factory=list)
    plots: list[Plot] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    insufficient: list[str] = field(default_factory=list)


@dataclass
class RunConfigView:
    label: str
    path: str
    items: list[tuple[str, str]]
    profiles: Table
    versions: str


@dataclass
class MatrixCell:
    text: str
    rate: float | None
    title: str


@dataclass
class Matrix:
    columns: list[tuple[str, str]]
    agents: list[tuple[str, int]]
    rows: list[tuple[str, str, str, list[MatrixCell]]]
    """(domain, task, anchor, cells)"""


@dataclass
class ShrunkItem:
    """One minimal failing schedule, as `shrink` or `hunt` recorded it."""

    run: str
    agent: str
    task_id: str
    profile: str
    faults: list[str]
    verdict: str
    source: str
    runs: int
    schedule: str
    command: str


@dataclass
class ShrunkGroup:
    """Minimal failing schedules of one pattern ("fails when ... hits the 2nd call")."""

    pattern: str
    where: list[str]
    items: list[ShrunkItem]


@dataclass
class Report:
    title: str
    subtitle: str
    configs: list[RunConfigView]
    verdicts: list[tuple[str, str, bool]]
    verdict_note: str
    warnings: list[str]
    sections: list[Section]
    matrix: Matrix
    tasks: list[TaskEpisodes]
    episodes_total: int
    episodes_left_out: int
    shrunk: list[ShrunkGroup] = field(default_factory=list)

    @property
    def toc(self) -> list[tuple[str, str]]:
        return [
            ("config", "Run configuration"),
            ("verdict", "Verdict"),
            *[(s.id, s.title) for s in self.sections],
            *([("schedules", "Minimal failing schedules")] if self.shrunk else []),
            ("tasks", "Success by task"),
            ("episodes", "Episodes"),
        ]


def _date(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _config_view(label: str, run_dir: Path) -> RunConfigView:
    config = RunConfig.model_validate_json((run_dir / CONFIG_FILE).read_text(encoding="utf-8"))
    tasks = (
        list(read_jsonl(run_dir / TASKS_FILE, TaskMeta)) if (run_dir / TASKS_FILE).exists() else []
    )
    agents = config.settings.get("agents") or ([config.agent] if config.agent else [])
    profiles = list(config.profiles)
    epsilons = ", ".join(f"{e:g}" for e in config.epsilons) or NA
    trials = config.trials or 0
    planned = (
        len(tasks) * len(config.epsilons or [0]) * len(profiles) * trials * max(len(agents), 1)
    )
    grid = (
        f"{len(agents)} agent{'s' * (len(agents) != 1)} × {len(tasks)} tasks × "
        f"{len(config.epsilons or [0])} ε × {len(profiles)} profile{'s' * (len(profiles) != 1)}"
        f" × {trials} trial{'s' * (trials != 1)} = {planned} episodes"
    )
    if config.settings.get("source") == "pytest":
        planned = int(str(config.settings.get("episodes_planned") or 0))
        grid = f"{len(tasks)} tests, {planned} chaos episodes (each test's own profiles × trials)"
    command = (
        shlex.join(config.command)
        if config.command
        else "not recorded (this run directory predates the command line in config.json)"
    )
    items = [
        ("command", command),
        ("date", _date(config.created_at)),
        ("seed", str(config.seed)),
        ("agents", ", ".join(str(a) for a in agents) or NA),
        ("suite", config.suite or NA),
        ("domains", ", ".join(config.domains) or NA),
        ("ε levels", epsilons),
        ("grid", grid),
        ("transport", config.transport or NA),
    ]
    rows = []
    for name, profile in config.profiles.items():
        weights = profile.get("weights") or {}
        rows.append(
            [
                name,
                ", ".join(f"{k} {v:g}" for k, v in weights.items()) or "–",
                str(profile.get("description") or ""),
                str(profile.get("failure_rate", NA)),
            ]
        )
    versions = ", ".join(f"{k} {v}" for k, v in config.versions.items())
    return RunConfigView(
        label,
        str(run_dir),
        items,
        Table(
            ["profile", "fault weights", "description", "λ (failure rate)"],
            rows,
            left=3,
            wrap=True,
        ),
        versions,
    )


def _headline(results: Results) -> Section:
    headers, rows = table.headline_rows(results, with_cn_frr=True, all_ks=True)
    return Section(
        "headline",
        "Headline",
        tables=[Table(headers, rows, left=2)],
        notes=[
            "n: evaluable episodes / all episodes (infrastructure outcomes counted apart). "
            "SR: success rate (Wilson 95% interval); FRR: Failure Resilience Rate over episodes "
            "with a delivered fault, n(FRR) of them; PEI: planning efficiency; pass^k: all k "
            "trials of a task succeed."
        ],
    )


def _surface(results: Results, ks: list[int]) -> Section:
    section = Section("surface", "Reliability surface R(k, ε, λ)")
    for index, agent in enumerate(results.agents):
        plot = figures.surface_plot(agent, ks, index)
        if isinstance(plot, str):
            section.insufficient = [plot]
            break
        section.plots.append(plot)
    rows = [
        [
            a.agent,
            est(a.surface.volume),
            est(a.surface.gradient_k),
            est(a.surface.gradient_epsilon),
            est(a.surface.gradient_lambda),
        ]
        for a in results.agents
    ]
    if any(cell != NA for row in rows for cell in row[1:]):
        section.tables.append(
            Table(
                ["agent", "volume", "∂R/∂k (per trial)", "∂R/∂ε (per unit)", "∂R/∂λ (per unit)"],
                rows,
            )
        )
    return section


def _pass_k(results: Results, k_max: int) -> Section:
    section = Section("pass-k", "pass^k over k")
    plot = figures.pass_k_plot(results.groups, k_max)
    if isinstance(plot, str):
        section.insufficient = [plot]
    else:
        section.plots.append(plot)
    return section


def _comparisons(results: Results) -> Section | None:
    if not results.comparisons:
        return None
    section = Section("comparisons", "Comparisons")
    plot = figures.forest_plot(results.comparisons)
    if isinstance(plot, Plot):
        section.plots.append(plot)
    rows = [
        [
            c.metric,
            f"{c.a} @ {c.profile_a}",
            f"{c.b} @ {c.profile_b}",
            signed(c.diff),
            str(c.diff.n),
        ]
        for c in results.comparisons
    ]
    section.tables.append(
        Table(
            ["metric", "a", "b", "a − b [95% CI]", "n"],
            rows,
            left=3,
            emphasis=[excludes_zero(c.diff) for c in results.comparisons],
            folded=f"All {len(rows)} comparisons as a table" if section.plots else None,
        )
    )
    section.notes.append("Bold: the 95% interval excludes 0.")
    return section


def _recovery(results: Results) -> Section | None:
    rows = table.recovery_rows(results)
    if not rows:
        return None
    headers = [h.replace("\n", " ") for h in table.RECOVERY_HEADERS]
    return Section(
        "recovery",
        "Recovery by fault type",
        tables=[Table(headers, rows, left=3)],
        notes=[
            "Seen: faults the agent could observe (not HighLatency). Recovered, by rule: retry = "
            "a later call of the same tool (for a model fault, marked (model), to the same model "
            "endpoint) came back clean; adapt = a persistent fault, the episode succeeded."
        ],
    )


def _hygiene(results: Results) -> Section | None:
    if not any(table.hygiene_applies(g) for g in results.groups):
        return None
    headers = [h.replace("\n", " ") for h in table.HYGIENE_HEADERS]
    return Section(
        "hygiene",
        "Retry hygiene",
        tables=[Table(headers, table.hygiene_rows(results), left=2)],
        notes=["count (episodes affected / evaluable episodes)."],
    )


def _corruption(results: Results) -> Section | None:
    rows = table.corruption_rows(results)
    if not rows:
        return None
    headers = [h.replace("\n", " ") for h in table.CORRUPTION_HEADERS]
    return Section(
        "corruption",
        "Corruption and injection",
        tables=[Table(headers, rows, left=2)],
        notes=[
            "Only the profiles that corrupt parameters or inject instructions are shown. "
            "Compliance attempted: the agent called the tool an injected instruction named "
            "(from the log); applied: the instruction's effect reached the service's state "
            "(from the journal)."
        ],
    )


def _delivery(results: Results) -> Section | None:
    groups = table.delivery_groups(results)
    if not groups:
        return None
    headers, rows = table.delivery_table(results)
    kinds = [
        [
            g.agent,
            g.profile,
            k.fault,
            str(k.drawn),
            str(k.delivered),
            NA if k.nominal_rate is None else f"{k.nominal_rate:.3f}",
            est(k.realised_rate, 3),
        ]
        for g in groups
        if g.delivery is not None
        for k in [*g.delivery.by_fault, *(g.delivery.model.by_fault if g.delivery.model else [])]
        if k.drawn or k.delivered
    ]
    return Section(
        "delivery",
        "Fault delivery",
        tables=[
            Table([h.replace("\n", " ") for h in headers], rows, left=2),
            Table(
                [
                    "agent",
                    "profile",
                    "fault",
                    "drawn",
                    "delivered",
                    "profile rate",
                    "rate [95% CI]",
                ],
                kinds,
                left=3,
                folded=f"By fault type ({len(kinds)} rows)",
            ),
        ],
        notes=[
            "Fault rate: tool calls carrying a freshly drawn, delivered fault / tool calls "
            "(Wilson interval), beside the profile's failure_rate. A fault drawn but never "
            "delivered did not reach the agent (e.g. nothing to make stale)."
        ],
    )


def _domains(results: Results) -> Section | None:
    if len({d.domain for d in results.domains}) < 2:
        return None
    rows = [
        [
            d.agent,
            d.profile,
            d.domain,
            f"{d.counts.evaluable}/{d.counts.total}",
            est(d.sr),
            est(d.frr),
            est(d.pei, interval=False),
            est(d.pass_k[0].pass_hat, interval=False) if d.pass_k else NA,
        ]
        for d in results.domains
    ]
    return Section(
        "domains",
        "By domain",
        tables=[
            Table(
                ["agent", "profile", "domain", "n", "SR [95% CI]", "FRR [95% CI]", "PEI", "pass^1"],
                rows,
                left=3,
            )
        ],
    )


def _matrix(rows: Sequence[EpisodeRow], results: Results) -> Matrix:
    columns = [(g.agent, g.profile) for g in results.groups]
    tally: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    by_eps: dict[tuple[str, str, str], dict[float, list[bool]]] = defaultdict(
        lambda: defaultdict(list)
    )
    domains: dict[str, str] = {}
    for r in rows:
        domains[r.task_id] = r.domain
        if r.success is not None:
            tally[(r.task_id, r.agent, r.profile)].append(r.success)
            by_eps[(r.task_id, r.agent, r.profile)][r.epsilon].append(r.success)
    out_rows = []
    for task in sorted(domains, key=lambda t: (domains[t], t)):
        cells = []
        for agent, profile in columns:
            trials = tally.get((task, agent, profile), [])
            if not trials:
                cells.append(MatrixCell("–", None, "no evaluable episode"))
                continue
            split = by_eps[(task, agent, profile)]
            title = "; ".join(f"ε={e:g}: {sum(v)}/{len(v)}" for e, v in sorted(split.items()))
            cells.append(
                MatrixCell(f"{sum(trials)}/{len(trials)}", sum(trials) / len(trials), title)
            )
        out_rows.append((domains[task], task, task_anchor(task), cells))
    agents: list[tuple[str, int]] = []
    for agent, _ in columns:
        if agents and agents[-1][0] == agent:
            agents[-1] = (agent, agents[-1][1] + 1)
        else:
            agents.append((agent, 1))
    return Matrix(columns, agents, out_rows)


def _rename(rows: list[EpisodeRow]) -> None:
    """Agent names as the results label them: agent@run when two runs share an agent."""
    runs_of: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        runs_of[r.agent].add(r.run)
    for r in rows:
        if len(runs_of[r.agent]) > 1:
            r.agent = f"{r.agent}@{r.run}"


def build(results: Results, run_dirs: Sequence[Path], report_path: Path) -> Report:
    k_max = int(str(results.settings.get("k_max", 1)))
    ks = show_ks(k_max)
    labels = [r.label for r in results.runs]
    configs = [_config_view(label, Path(p)) for label, p in zip(labels, run_dirs, strict=True)]
    rows: list[EpisodeRow] = []
    for label, run_dir in zip(labels, run_dirs, strict=True):
        rows += episode_rows(Path(run_dir), label, report_path.parent.resolve())
    _rename(rows)
    verdicts = [
        (a.agent, f"{a.tier.text} · Δrel = {signed(a.delta_rel)}", a.tier.tier is not None)
        for a in results.agents
    ]
    sections = [_headline(results), _surface(results, ks), _pass_k(results, k_max)]
    for optional in (
        _comparisons(results),
        _delivery(results),
        _recovery(results),
        _hygiene(results),
        _corruption(results),
        _domains(results),
    ):
        if optional is not None:
            sections.append(optional)
    tasks, left_out = by_task(rows)
    shrunk = _shrunk(labels, run_dirs)
    return Report(
        title="chaosproxy report",
        subtitle=" · ".join(
            [", ".join(r.path for r in results.runs), table.counts_line(results.counts)]
        ),
        configs=configs,
        verdicts=verdicts,
        verdict_note=f"{'. '.join(table.verdict_notes(results))}. Judged on {CAVEAT}.",
        warnings=list(results.warnings),
        sections=sections,
        matrix=_matrix(rows, results),
        tasks=tasks,
        episodes_total=len(rows),
        episodes_left_out=left_out,
        shrunk=shrunk,
    )


def _shrunk(labels: Sequence[str], run_dirs: Sequence[Path]) -> list[ShrunkGroup]:
    """The minimal failing schedules `shrink`/`hunt` recorded in the runs, by pattern;
    the same schedule of the same agent and task once (the latest)."""
    groups: dict[str, ShrunkGroup] = {}
    seen: dict[tuple[str, str, str], ShrunkItem] = {}
    for label, run_dir in zip(labels, run_dirs, strict=True):
        for row in read_shrunk(Path(run_dir)):
            schedule = parse_schedule(row.schedule, SHRUNK_FILE)
            text = dump_schedule(schedule)
            item = ShrunkItem(
                run=label,
                agent=row.agent,
                task_id=row.task_id,
                profile=row.profile,
                faults=[entry.label() for entry in schedule.faults],
                verdict=row.verdict,
                source=row.source + (" (budget spent)" if row.budget_spent else ""),
                runs=row.runs,
                schedule=text,
                command=(
                    f"chaosproxy run --agent {shlex.quote(row.agent)} --tasks "
                    f"{shlex.quote(row.task_id)} --profile {shlex.quote(row.profile)} "
                    f"--seed {row.seed} --trials 1 --schedule minimal.json"
                ),
            )
            key = (row.agent, row.task_id, text)
            group = groups.setdefault(row.group, ShrunkGroup(row.group, [], []))
            if key in seen:
                group.items[group.items.index(seen[key])] = item
            else:
                group.items.append(item)
                if row.where and row.where not in group.where:
                    group.where.append(row.where)
            seen[key] = item
    return list(groups.values())
