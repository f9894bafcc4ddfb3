"""The three papers' experimental designs as grid blocks, and the tables each one prints."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chaosproxy.papers import agentprop, hbeval, reliabilitybench
from chaosproxy.papers.table import Table
from chaosproxy.runner.grid import select_tasks
from chaosproxy.runner.gridfile import GridBlock
from chaosproxy.scoring.api import Scored


@dataclass(frozen=True)
class Design:
    name: str
    paper: str
    suite: str
    agents: tuple[str, ...]
    """Offline defaults: the paper's architectures with the mock model, or scripted agents."""
    trials: int
    tasks_per_domain: int
    """0: every task of the suite; ReliabilityBench verified 5 per domain."""
    build: Callable[[Sequence[str], Sequence[str], Sequence[str], int], list[GridBlock]]
    tables: Callable[[Scored], list[Table]]
    model_via_proxy: bool = False
    """Model calls go through the run's proxy (the design injects into model replies)."""


def _reliabilitybench(
    agents: Sequence[str], models: Sequence[str], tasks: Sequence[str], trials: int
) -> list[GridBlock]:
    """§5.1: main grid λ ∈ {0, 0.2} × ε ∈ {0, 0.1, 0.2}; ablation at λ 0.2, one ε."""
    common = {
        "agents": list(agents),
        "models": list(models),
        "suite": "reliabilitybench",
        "tasks": list(tasks),
        "trials": trials,
    }
    return [
        GridBlock(
            name="main", epsilons=[0.0, 0.1, 0.2], profiles=["lambda0.0", "lambda0.2"], **common
        ),
        GridBlock(
            name="ablation",
            epsilons=[0.0],
            profiles=[p for _, p in reliabilitybench.ABLATION],
            **common,
        ),
    ]


def _baseline_and_stress(
    suite: str, profiles: tuple[str, str]
) -> Callable[[Sequence[str], Sequence[str], Sequence[str], int], list[GridBlock]]:
    """One block at ε 0: a clean baseline profile beside the paper's stress profile
    (HB-Eval §5: FIT v2; AgentProp-Bench §4.4: P2 semantic-wrong injection)."""

    def build(
        agents: Sequence[str], models: Sequence[str], tasks: Sequence[str], trials: int
    ) -> list[GridBlock]:
        return [
            GridBlock(
                name=suite,
                agents=list(agents),
                models=list(models),
                suite=suite,
                tasks=list(tasks),
                epsilons=[0.0],
                profiles=list(profiles),
                trials=trials,
            )
        ]

    return build


def _agentprop(
    agents: Sequence[str], models: Sequence[str], tasks: Sequence[str], trials: int
) -> list[GridBlock]:
    """§4.4: a clean baseline beside P2. Model-driven agents get the paper's injection point
    (the model's planned tool call rewritten, `agentprop-p2-model`); scripted agents have no
    model to inject into and keep the proxy-side variant (`agentprop-p2`)."""
    from chaosproxy.agents.registry import is_model_agent

    driven = [a for a in agents if is_model_agent(a)]
    scripted = [a for a in agents if not is_model_agent(a)]
    common = {"suite": "agentprop", "tasks": list(tasks), "epsilons": [0.0], "trials": trials}
    blocks = []
    if scripted:
        profiles = [agentprop.BASELINE, agentprop.INJECTED]
        blocks.append(GridBlock(name="agentprop", agents=scripted, profiles=profiles, **common))
    if driven:
        profiles = [agentprop.BASELINE, agentprop.INJECTED_MODEL]
        blocks.append(
            GridBlock(
                name="agentprop-model",
                agents=driven,
                models=list(models),
                profiles=profiles,
                **common,
            )
        )
    return blocks


DESIGNS: dict[str, Design] = {
    "reliabilitybench": Design(
        "reliabilitybench",
        "ReliabilityBench (Gupta, 2025)",
        "reliabilitybench",
        ("react", "reflexion"),
        trials=2,
        tasks_per_domain=5,
        build=_reliabilitybench,
        tables=reliabilitybench.tables,
    ),
    "hb-eval": Design(
        "hb-eval",
        "HB-Eval (Adam, 2025)",
        "hb-eval",
        ("react", "reflexion", "ap-edm"),
        trials=1,
        tasks_per_domain=0,
        build=_baseline_and_stress("hb-eval", (hbeval.NOMINAL, hbeval.STRESSED)),
        tables=hbeval.tables,
    ),
    "agentprop": Design(
        "agentprop",
        "AgentProp-Bench (2025)",
        "agentprop",
        ("naive", "retry", "robust", "react"),
        trials=1,
        tasks_per_domain=0,
        build=_agentprop,
        tables=agentprop.tables,
        model_via_proxy=True,
    ),
}


def task_subset(suite: str, per_domain: int) -> list[str]:
    """The first `per_domain` task ids of each domain of the suite (all when 0)."""
    if per_domain <= 0:
        return []
    chosen: dict[str, list[str]] = {}
    for task in sorted(select_tasks(suite), key=lambda t: t.id):
        chosen.setdefault(task.domain, [])
        if len(chosen[task.domain]) < per_domain:
            chosen[task.domain].append(task.id)
    return [task_id for ids in chosen.values() for task_id in ids]
