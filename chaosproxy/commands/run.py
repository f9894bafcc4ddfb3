"""`chaosproxy run`: the grid runner's command line."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from chaosproxy import eventloop
from chaosproxy.commands.pacing_options import pacing_options
from chaosproxy.commands.score import enforce_gates, parse_gates, score_and_print
from chaosproxy.compose.options import remote_options, remote_spec
from chaosproxy.profiles import ProfileError, load_profile
from chaosproxy.records import EPISODE_DIR, EPISODES_FILE, EpisodeRecord, read_jsonl
from chaosproxy.runner.command_agent import AgentIsolation
from chaosproxy.runner.grid import GridError, parse_shard
from chaosproxy.runner.gridfile import GridFileError, load_grid
from chaosproxy.runner.models import Price, usage_table
from chaosproxy.runner.run import RunError, RunSpec, execute
from chaosproxy.tracing.cli import otlp_options


def _parse_base_urls(values: tuple[str, ...]) -> tuple[str | None, dict[str, str]]:
    """`URL` serves every model; `NAME=URL` one model (a URL's own `=` is after `://`)."""
    default: str | None = None
    per_model: dict[str, str] = {}
    for value in values:
        name, sep, url = value.partition("=")
        if sep and "://" not in name:
            if not name or not url:
                raise click.BadParameter(f"{value!r}: use NAME=URL", param_hint="--base-url")
            per_model[name] = url
        elif default is not None and default != value:
            raise click.BadParameter(
                f"two endpoints for every model ({default}, {value}); use NAME=URL for one model",
                param_hint="--base-url",
            )
        else:
            default = value
    return default, per_model


def _parse_prices(values: tuple[str, ...]) -> dict[str, Price]:
    prices: dict[str, Price] = {}
    for value in values:
        name, _, rates = value.rpartition("=")
        prompt, slash, completion = rates.partition("/")
        try:
            price = (float(prompt), float(completion))
        except ValueError:
            price = (-1.0, -1.0)
        if not name or not slash or min(price) < 0:
            raise click.BadParameter(
                f"{value!r}: use MODEL=IN/OUT, US$ per million tokens (e.g. gpt-4o=2.5/10)",
                param_hint="--price",
            )
        prices[name] = price
    return prices


def _split_commas(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


@click.command()
@click.option(
    "--grid",
    "grid_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A grid file of blocks (agents, models, suite, ε, profiles, trials each), instead of "
    "the grid flags.",
)
@click.option(
    "--agent",
    "agents",
    multiple=True,
    help="naive | retry | robust | react | reflexion | ap-edm (repeatable).",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    help="Model for the model-driven agents (repeatable: a grid axis, one run per model).",
)
@click.option(
    "--base-url",
    "base_urls",
    multiple=True,
    help="OpenAI-compatible endpoint (…/v1) for every model; NAME=URL for one model (repeatable).",
)
@click.option(
    "--price",
    "prices",
    multiple=True,
    help="MODEL=IN/OUT: US$ per million prompt/completion tokens, for cost (repeatable).",
)
@click.option(
    "--model-via-proxy",
    is_flag=True,
    help="Model-driven agents reach their model through the run's proxy "
    "(/e/EPISODE/llm/v1): model faults (ModelRateLimit, ModelOverloaded, …) draw from the "
    "episode's profile and calls.jsonl logs them as kind model_call (not steps). With "
    "--services, the running proxy's upstream llm (llm-2, … per distinct --base-url).",
)
@click.option(
    "--memory",
    type=click.Path(path_type=Path, file_okay=False),
    help="ap-edm: episodic memory directory (built with `chaosproxy memory build`).",
)
@click.option(
    "--embedding-model",
    help="ap-edm: a /v1/embeddings model (on --base-url); default: offline lexical embedding.",
)
@click.option("--agent-cmd", help="Run this shell command once per episode instead (any language).")
@click.option(
    "--agent-name", default="cmd", show_default=True, help="Label for --agent-cmd in results."
)
@click.option(
    "--agent-env-only",
    "agent_env_only",
    multiple=True,
    metavar="NAME",
    help="--agent-cmd gets only these variables of the environment (repeatable, comma list) "
    "besides its CHAOS_* contract. [default: all but CHAOSPROXY_* and their values]",
)
@click.option(
    "--agent-user",
    metavar="USER",
    help="Run --agent-cmd as this user (name or uid; needs root): the way to keep the agent "
    "out of the operator's processes and files when the runner runs as root.",
)
@click.option(
    "--suite",
    default="reliabilitybench",
    show_default=True,
    help="reliabilitybench | hb-eval | agentprop | all",
)
@click.option(
    "--domains", "domains", multiple=True, help="Only these domains of the suite (comma list)."
)
@click.option(
    "--tasks", "task_patterns", multiple=True, help="Only task ids matching this glob (repeatable)."
)
@click.option(
    "--profile",
    "profiles",
    multiple=True,
    help="Fault profile λ (repeatable). [default: lambda0.0, lambda0.2]",
)
@click.option(
    "--epsilon",
    "epsilons",
    multiple=True,
    type=float,
    help="Perturbation level ε (repeatable). [default: 0]",
)
@click.option(
    "--trials", default=1, show_default=True, type=click.IntRange(1), help="Trials k per cell."
)
@click.option("--concurrency", default=16, show_default=True, type=click.IntRange(1, 256))
@click.option(
    "--seed", default=7, show_default=True, type=int, help="Run seed: faults and ε draw from it."
)
@click.option("--transport", type=click.Choice(["rest", "mcp"]), default="rest", show_default=True)
@click.option(
    "--episode-timeout",
    default=60.0,
    show_default=True,
    type=click.FloatRange(min=1),
    help="Seconds before an episode's agent is stopped (a runner timeout).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory. [default: runs/<time>]",
)
@click.option(
    "--resume", is_flag=True, help="Finish a partial run in --out (same flags as the first run)."
)
@click.option("--no-score", is_flag=True, help="Do not score and write the report at the end.")
@click.option("--paraphrase-model", help="Also paraphrase task text at ε ≥ 0.2 with this model.")
@click.option(
    "--paraphrase-base-url",
    help="OpenAI-compatible endpoint for --paraphrase-model (key from OPENAI_API_KEY).",
)
@click.option(
    "--max-cost",
    type=click.FloatRange(min=0, min_open=True),
    help="US$: start no new episode once the recorded ones cost this much (needs --price).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    help="Start no new episode once the recorded ones used this many model tokens.",
)
@click.option(
    "--shard",
    metavar="I/N",
    help="Run only shard I of N of the grid (split by episode key, the same on every "
    "machine); join the shards with `chaosproxy merge`.",
)
@click.option(
    "--texts",
    "texts_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Task texts computed once (a run directory's texts.jsonl, e.g. from --prepare): "
    "no perturbing or paraphrasing again, so every shard reads the same words.",
)
@click.option(
    "--prepare",
    is_flag=True,
    help="Write the run directory (config, tasks, grid, texts) and run no episode.",
)
@click.option(
    "--fail-under",
    "fail_under",
    multiple=True,
    metavar="METRIC[@PROFILE]=VALUE",
    help="Exit 1 when a group's point estimate is below VALUE (sr, frr, pei, pass^K; n/a "
    "counts as failing), as `score --fail-under`. Repeatable.",
)
@click.option(
    "--schedule",
    "schedule_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="A fault schedule (JSON/YAML, docs/schedules.md) that replaces the profile's "
    "draws in every episode of the grid.",
)
@click.option(
    "--schedule-overlay",
    "overlay_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="A fault schedule laid over the profile's draws (they still apply on calls it "
    "does not name).",
)
@remote_options
@otlp_options
@pacing_options
def run(
    grid_file: Path | None,
    agents: tuple[str, ...],
    models: tuple[str, ...],
    base_urls: tuple[str, ...],
    prices: tuple[str, ...],
    model_via_proxy: bool,
    memory: Path | None,
    embedding_model: str | None,
    agent_cmd: str | None,
    agent_name: str,
    agent_env_only: tuple[str, ...],
    agent_user: str | None,
    suite: str,
    domains: tuple[str, ...],
    task_patterns: tuple[str, ...],
    profiles: tuple[str, ...],
    epsilons: tuple[float, ...],
    trials: int,
    concurrency: int,
    seed: int,
    transport: str,
    episode_timeout: float,
    out: Path | None,
    resume: bool,
    no_score: bool,
    paraphrase_model: str | None,
    paraphrase_base_url: str | None,
    max_cost: float | None,
    max_tokens: int | None,
    shard: str | None,
    texts_file: Path | None,
    prepare: bool,
    otlp_endpoint: str | None,
    otlp_content: str | None,
    schedule_file: Path | None,
    overlay_file: Path | None,
    fail_under: tuple[str, ...],
    rpm: int | None,
    tpm: int | None,
    provider_retries: int | None,
    **remote: Any,
) -> None:
    """Run agents over tasks × ε × λ × trials; every cell is its own episode.

    \b
    Example:
      chaosproxy run --agent naive --agent robust --profile lambda0.0 --profile lambda0.2 \\
          --epsilon 0 --epsilon 0.1 --trials 4 --out runs/compare
    """
    blocks = []
    if grid_file is not None:
        given = [
            flag
            for flag, value in (
                ("--agent", agents),
                ("--agent-cmd", agent_cmd),
                ("--model", models),
                ("--domains", domains),
                ("--tasks", task_patterns),
                ("--profile", profiles),
                ("--epsilon", epsilons),
            )
            if value
        ]
        if given:
            raise click.UsageError(f"--grid sets the grid; drop {', '.join(given)}")
        try:
            blocks = load_grid(grid_file).blocks
        except GridFileError as bad:
            raise click.UsageError(str(bad)) from bad
        agents = tuple(dict.fromkeys(a for block in blocks for a in block.agents))
        models = tuple(dict.fromkeys(m for block in blocks for m in block.models))
    if agent_cmd and agents:
        raise click.UsageError("use either --agent or --agent-cmd, not both")
    if (agent_env_only or agent_user) and not agent_cmd:
        raise click.UsageError("--agent-env-only and --agent-user apply to --agent-cmd only")
    if not agent_cmd and not agents:
        raise click.UsageError(
            "name an agent: --agent naive|retry|robust|react|reflexion|ap-edm, or --agent-cmd 'CMD'"
        )
    for epsilon in epsilons:
        if not 0 <= epsilon <= 1:
            raise click.BadParameter(f"{epsilon} is outside [0, 1]", param_hint="--epsilon")
    base_url, model_urls = _parse_base_urls(base_urls)
    model_list = list(dict.fromkeys(models))
    unknown = sorted(set(model_urls) - {*model_list, embedding_model})
    if unknown:
        raise click.BadParameter(
            f"{', '.join(unknown)} is not among the --model values", param_hint="--base-url"
        )
    try:
        shard_of = parse_shard(shard) if shard is not None else None
    except GridError as bad:
        raise click.BadParameter(str(bad), param_hint="--shard") from bad
    gates = parse_gates(fail_under)
    paced = [flag for flag, value in (("--rpm", rpm), ("--tpm", tpm)) if value is not None]
    if paced and not model_via_proxy:
        raise click.UsageError(
            f"{'/'.join(paced)} paces model calls in the run's proxy: add --model-via-proxy"
        )
    if (paced or provider_retries is not None) and remote.get("remote_services"):
        raise click.UsageError(
            "with --services the running proxy paces and re-sends model calls: start it "
            "with `chaosproxy up --rpm N --tpm N --provider-retries N`"
        )
    if grid_file is None:
        _check_profiles(profiles)
    if schedule_file is not None and overlay_file is not None:
        raise click.UsageError("use either --schedule or --schedule-overlay, not both")
    schedule = None
    if schedule_file is not None or overlay_file is not None:
        from chaosproxy.faults.schedule import ScheduleError
        from chaosproxy.replay.files import load_schedule

        try:
            schedule = load_schedule(schedule_file or overlay_file)  # type: ignore[arg-type]
        except ScheduleError as bad:
            raise click.BadParameter(
                str(bad), param_hint="--schedule" if schedule_file else "--schedule-overlay"
            ) from bad
    spec = RunSpec(
        agents=[agent_name] if agent_cmd else list(dict.fromkeys(agents)),
        agent_command=agent_cmd,
        agent_isolation=AgentIsolation(
            env_only=tuple(_split_commas(agent_env_only)) if agent_env_only else None,
            user=agent_user,
        ),
        suite=suite,
        domains=_split_commas(domains),
        task_patterns=list(task_patterns),
        profiles=list(dict.fromkeys(profiles)) or ["lambda0.0", "lambda0.2"],
        epsilons=list(dict.fromkeys(epsilons)) or [0.0],
        trials=trials,
        concurrency=concurrency,
        seed=seed,
        transport="mcp" if transport == "mcp" else "rest",
        timeout_s=episode_timeout,
        out=out or Path("runs") / time.strftime("%Y%m%d-%H%M%S"),
        resume=resume,
        paraphrase_model=paraphrase_model,
        paraphrase_base_url=paraphrase_base_url,
        models=model_list,
        base_url=base_url,
        model_urls=model_urls,
        prices=_parse_prices(prices),
        model_via_proxy=model_via_proxy,
        memory=memory,
        embedding_model=embedding_model,
        remote=remote_spec(**remote),
        blocks=blocks,
        shard=shard_of,
        texts_file=texts_file,
        prepare_only=prepare,
        max_cost_usd=max_cost,
        max_tokens=max_tokens,
        otlp_endpoint=otlp_endpoint,
        otlp_content=otlp_content,
        rpm=rpm,
        tpm=tpm,
        provider_retries=provider_retries,
        schedule=schedule,
        schedule_mode="replace" if schedule_file is not None else "overlay",
    )
    try:
        summary = eventloop.run(execute(spec))
    except (RunError, GridError) as problem:
        raise click.ClickException(str(problem)) from problem
    click.echo(
        f"{summary.recorded}/{summary.total} episodes recorded in {spec.out} "
        f"({summary.elapsed_s:.1f} s)"
    )
    for line in usage_table(spec.out / EPISODES_FILE):
        click.echo(line)
    if prepare:
        click.echo(f"prepared {spec.out}: shards can read its task texts with --texts")
        return
    if summary.budget is not None and summary.recorded < summary.total:
        click.echo(
            f"stopped starting episodes: {summary.budget}; {summary.total - summary.recorded} "
            f"not run (raise the cap and add --resume --out {spec.out} to run them)"
        )
    if summary.interrupted:
        click.echo(f"stopped early: finish with the same flags plus --resume --out {spec.out}")
    results = None
    if not no_score and summary.recorded:
        from chaosproxy.report import write_report

        results = score_and_print([spec.out])
        report = write_report(spec.out)
        click.echo(f"report: {report}")
    if summary.recorded and not _any_completed(spec.out):
        raise click.ClickException(
            "no episode completed: every one crashed, timed out or failed in the "
            f"infrastructure. {_first_stderr(spec.out)}"
        )
    if gates:
        enforce_gates(results or score_and_print([spec.out], quiet=True), gates, False)


def _check_profiles(names: tuple[str, ...]) -> None:
    """A profile typo is a usage error (exit 2), as in `up`, before anything starts."""
    for name in names:
        try:
            load_profile(name)
        except (ProfileError, OSError) as bad:
            raise click.BadParameter(str(bad), param_hint="--profile") from None


def _any_completed(out: Path) -> bool:
    path = out / EPISODES_FILE
    return any(r.outcome == "completed" for r in read_jsonl(path, EpisodeRecord))


def _first_stderr(out: Path) -> str:
    """Where the first failed episode's stderr went, and its last line: the why."""
    for record in read_jsonl(out / EPISODES_FILE, EpisodeRecord):
        stderr = out / EPISODE_DIR / record.episode / "stderr.txt"
        if stderr.is_file():
            lines = stderr.read_text(encoding="utf-8", errors="replace").strip().splitlines()
            last = f": {lines[-1][:300]}" if lines else " (empty)"
            return f"The agent's stderr is in {stderr}{last}"
        if record.error:
            return f"First error ({record.episode}): {record.error[:300]}"
    return f"Each episode's output is in {out / EPISODE_DIR}/<episode>/."
