"""The `chaosproxy` command.

Each subcommand lives in its own module under chaosproxy/commands/ and is imported only
when it runs, so `chaosproxy --help` stays fast and one broken area cannot take the
others down.
"""

from __future__ import annotations

import importlib

import click

# name -> (module:attribute, one-line help shown by `chaosproxy --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "domains": (
        "chaosproxy.commands.domains:domains",
        "List domains, their tools and task counts.",
    ),
    "tasks": ("chaosproxy.commands.tasks:tasks", "List task ids, texts, domains and l_min."),
    "serve": ("chaosproxy.commands.domains:serve", "Serve one domain (REST + MCP + oracle)."),
    "profiles": ("chaosproxy.commands.profiles:profiles", "List, show and check fault profiles."),
    "up": ("chaosproxy.commands.up:up", "Start the domain services behind the fault proxy."),
    "run": ("chaosproxy.commands.run:run", "Drive an agent over a task grid into a run dir."),
    "reproduce": (
        "chaosproxy.commands.reproduce:reproduce",
        "Run a paper's experiment (reliabilitybench, hb-eval, agentprop); print its tables.",
    ),
    "merge": (
        "chaosproxy.commands.merge:merge",
        "Merge shard run directories (run --shard I/N) into one run directory.",
    ),
    "score": ("chaosproxy.commands.score:score", "Compute every metric from a run directory."),
    "report": ("chaosproxy.commands.report:report", "Write the self-contained HTML report."),
    "mock-model": (
        "chaosproxy.commands.mock_model:mock_model",
        "Serve a deterministic OpenAI-compatible model for offline runs.",
    ),
    "memory": ("chaosproxy.commands.memory:memory", "Build and show ap-edm's episodic memory."),
    "schedule": (
        "chaosproxy.commands.schedule:schedule",
        "Print the fault schedule an episode received (--schema: the file format).",
    ),
    "shrink": (
        "chaosproxy.commands.schedule:shrink",
        "Shrink a failed episode's faults to the smallest schedule that still fails.",
    ),
    "hunt": (
        "chaosproxy.commands.schedule:hunt",
        "Sweep single faults, then pairs, over a task's calls; the failing ones, shrunk.",
    ),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        target, _ = COMMANDS[cmd_name]
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, help_text) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup)
@click.version_option(package_name="chaosproxy")
def main() -> None:
    """chaosproxy: what does your agent do when its tools misbehave?

    \b
    Quick start:
      chaosproxy up --profile lambda0.2      serve every domain behind the fault proxy
      chaosproxy run --agent robust ...      run an agent over a task grid
      chaosproxy score runs/NAME             compute the metrics of a run

    Every command has its own --help.
    """


if __name__ == "__main__":
    main()
