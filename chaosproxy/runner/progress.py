"""Progress of a run, per (agent, profile): done, ok/fail/infra, rate, elapsed, ETA and the
cell being run.

On a terminal it is a live rich display, one bar per (agent, profile) and one for the whole
run; elsewhere (CI logs, a pipe) it prints a plain line every `interval_s` seconds, since a
redrawn bar would fill a log with carriage returns.

ok/fail/infra use the scorer's own rule (`scoring.outcome.owner`): a crash or timeout right
after a delivered fault, or an infra_error the agent's own call caused, is a failure, not
infrastructure. The facts it needs come from calls.jsonl, followed as the proxy appends it
(only what this process's episodes log, from the offset the file had at start).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress
from rich.progress import Task as RichTask
from rich.table import Column
from rich.text import Text

from chaosproxy.records import CallRecord, EpisodeRecord
from chaosproxy.runner.grid import EpisodeSpec
from chaosproxy.scoring.calls import EpisodeCalls, observe
from chaosproxy.scoring.outcome import owner

MAX_WIDTH = 100
"""Never wider than this, so a run's output reads the same in a log as in a terminal."""


@dataclass
class _Cell:
    """Counts of one (agent, profile)."""

    total: int
    done: int = 0
    ok: int = 0
    fail: int = 0
    infra: int = 0
    running: str = ""
    task: TaskID | None = None


class _RateColumn(ProgressColumn):
    def render(self, task: RichTask) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None:
            return Text("    –/s", style="progress.data.speed")
        return Text(
            f"{speed:5.1f}/s" if speed < 100 else f"{speed:5.0f}/s", style="progress.data.speed"
        )


class CallTail:
    """calls.jsonl followed from where it ended when the run started: each episode's facts
    (scoring.calls) until its record arrives. Only whole lines are read; a line that is not
    a call record is skipped (the scorer names it; this is only the progress line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.is_file() else 0
        self.facts: dict[str, EpisodeCalls] = {}

    def _read(self) -> None:
        if not self.path.is_file():
            return
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        end = data.rfind(b"\n")
        if end < 0:
            return
        self.offset += end + 1
        for line in data[: end + 1].splitlines():
            if not line.strip():
                continue
            try:
                call = CallRecord.model_validate_json(line)
            except ValidationError:
                continue
            episode = self.facts.get(call.episode)
            if episode is None:
                episode = self.facts[call.episode] = EpisodeCalls()
            observe(episode, call)

    def pop(self, episode: str) -> EpisodeCalls:
        """The episode's facts so far (its record is written after its last call)."""
        self._read()
        return self.facts.pop(episode, None) or EpisodeCalls()


def _cell_text(spec: EpisodeSpec | EpisodeRecord) -> str:
    return f"{spec.task_id} ε{spec.epsilon:g} t{spec.trial}"


def _clock(seconds: float) -> str:
    s = int(seconds)
    return (
        f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
    )


class Progress:
    """Fed by the runner: `start` when an episode begins, `add` when its record is written."""

    def __init__(
        self,
        plan: Sequence[EpisodeSpec],
        done: Collection[str] = (),
        stream: TextIO | None = None,
        *,
        interval_s: float = 10.0,
        live: bool | None = None,
        calls_log: Path | None = None,
    ) -> None:
        self._stream = stream or sys.stderr
        self._tail = CallTail(calls_log) if calls_log is not None else None
        self._cells: dict[tuple[str, str], _Cell] = {}
        already = 0
        for spec in plan:
            cell = self._cells.setdefault((spec.agent, spec.profile), _Cell(total=0))
            cell.total += 1
            if spec.episode_id in done:
                cell.done += 1
                already += 1
        self.total = len(plan)
        self.done = already
        self._resumed = already
        self.successes = self.failures = self.infrastructure = 0
        self._interval_s = interval_s
        self._started = time.monotonic()
        self._last_line = self._started
        self._latest = ""
        self._printed = -1
        self._nodes: dict[str, int] = {}
        """Episodes finished per node (`run --ray`), for the per-node throughput."""
        self._nodes_since = self._nodes_last = self._started
        interactive = self._stream.isatty() if live is None else live
        self._rich: RichProgress | None = self._live_display() if interactive else None

    def _live_display(self) -> RichProgress:
        console = Console(file=self._stream, force_terminal=True)  # the terminal's width

        # Every column but the last keeps its width (numbers cut to "91/…" would be read
        # wrong); the cell being run takes what is left, cut with an ellipsis.
        def fixed() -> Column:
            return Column(no_wrap=True, overflow="crop")

        display = RichProgress(
            TextColumn("{task.description}", style="bold", table_column=fixed()),
            BarColumn(bar_width=max(4, min(16, console.width - 80)), table_column=fixed()),
            MofNCompleteColumn(table_column=fixed()),
            TextColumn("{task.fields[counts]}", table_column=fixed()),
            _RateColumn(table_column=fixed()),
            TimeElapsedColumn(table_column=fixed()),
            TextColumn("ETA", table_column=fixed()),
            TimeRemainingColumn(compact=True, table_column=fixed()),
            TextColumn(
                "{task.fields[running]}",
                style="dim",
                table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1),
            ),
            console=console,
            refresh_per_second=4,
            expand=True,
        )
        width = max(len(f"{agent} · {profile}") for agent, profile in self._cells) + 1
        for (agent, profile), cell in self._cells.items():
            cell.task = display.add_task(
                f"{agent} · {profile}".ljust(width),
                total=cell.total,
                completed=cell.done,
                counts=self._counts(cell),
                running="",
            )
        self._overall = display.add_task(
            "all".ljust(width), total=self.total, completed=self.done, counts="", running=""
        )
        display.start()
        return display

    @staticmethod
    def _counts(cell: _Cell) -> str:
        return f"[green]{cell.ok:>3}✓[/] [red]{cell.fail:>3}✗[/] [yellow]{cell.infra:>2}![/]"

    def start(self, spec: EpisodeSpec) -> None:
        cell = self._cells.get((spec.agent, spec.profile))
        self._latest = f"{spec.agent}/{spec.profile} {_cell_text(spec)}"
        if cell is None:
            return
        cell.running = _cell_text(spec)
        if self._rich is not None and cell.task is not None:
            self._rich.update(cell.task, running=cell.running)

    def add(self, record: EpisodeRecord, node: str | None = None) -> None:
        """A finished episode; `node`: where it ran (`run --ray`), for per-node rates."""
        self.done += 1
        if node is not None:
            self._nodes[node] = self._nodes.get(node, 0) + 1
            self._nodes_last = time.monotonic()
        cell = self._cells.setdefault((record.agent, record.profile), _Cell(total=0))
        cell.done += 1
        facts = self._tail.pop(record.episode) if self._tail is not None else None
        if not owner(record, facts).agent:
            self.infrastructure += 1
            cell.infra += 1
        elif record.success:
            self.successes += 1
            cell.ok += 1
        else:
            self.failures += 1
            cell.fail += 1
        if cell.done >= cell.total:
            cell.running = "done"
        if self._rich is not None:
            if cell.task is not None:
                self._rich.update(
                    cell.task, advance=1, counts=self._counts(cell), running=cell.running
                )
            self._rich.update(self._overall, advance=1, running=self.node_rates())
        elif time.monotonic() - self._last_line >= self._interval_s or self.done == self.total:
            self._print_line()

    def rate(self) -> float | None:
        """Episodes per second finished in this process (a resumed run's earlier ones excluded)."""
        elapsed = time.monotonic() - self._started
        finished = self.done - self._resumed
        return finished / elapsed if finished and elapsed > 0 else None

    def eta(self) -> str:
        rate = self.rate()
        finished = self.done - self._resumed
        if rate is None or finished < max(3, (self.total - self._resumed) // 50):
            return "–:––"
        return _clock((self.total - self.done) / rate)

    def workers_ready(self) -> None:
        """Per-node rates count from here (`run --ray`: the workers have started)."""
        self._nodes_since = time.monotonic()

    def node_rates(self) -> str:
        """Episodes per second of each node since its workers started (`run --ray`),
        e.g. `127.0.0.2 1.4/s 127.0.0.3 0.9/s`."""
        elapsed = time.monotonic() - self._nodes_since
        if not self._nodes or elapsed <= 0:
            return ""
        return " ".join(f"{node} {count / elapsed:.1f}/s" for node, count in self._nodes.items())

    def line(self) -> str:
        """The plain progress line (≤ 100 columns)."""
        rate = self.rate()
        text = (
            f"{self.done}/{self.total} ep · ok {self.successes} fail {self.failures} "
            f"infra {self.infrastructure} · "
            f"{'–' if rate is None else f'{rate:.1f}' if rate < 100 else f'{rate:.0f}'}/s · "
            f"elapsed {_clock(time.monotonic() - self._started)} · ETA {self.eta()}"
        )
        if self._nodes:
            text += f" · {self.node_rates()}"
        elif self._latest and self.done < self.total:
            text += f" · now {self._latest}"
        return text if len(text) <= MAX_WIDTH else text[: MAX_WIDTH - 1] + "…"

    def _print_line(self) -> None:
        self._stream.write(self.line() + "\n")
        self._stream.flush()
        self._last_line = time.monotonic()
        self._printed = self.done

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()
            return
        if self._printed != self.done:
            self._print_line()
        for (agent, profile), cell in self._cells.items():
            self._stream.write(
                f"  {agent} · {profile}: {cell.done}/{cell.total} · ok {cell.ok} "
                f"fail {cell.fail} infra {cell.infra}\n"
            )
        for node, count in self._nodes.items():
            elapsed = max(1e-9, self._nodes_last - self._nodes_since)  # not the shutdown
            self._stream.write(f"  node {node}: {count} episodes · {count / elapsed:.2f}/s\n")
        self._stream.flush()
