"""results.json: every number the scorer computes, with its n and 95 % interval."""

from __future__ import annotations

from pydantic import BaseModel, Field

from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.passk import PassK, Surface
from chaosproxy.scoring.rundir import FileProvenance, TruncatedLine

SCHEMA = "chaosproxy.results/1"
METRICS_VERSION = 2
"""Bumped whenever a definition changes (docs/metrics.md, "Changelog of definitions"), so
figures computed under different definitions are not compared blindly. 1: before issue 25
(results.json files without the field)."""


class Counts(BaseModel):
    """Episodes by outcome (as recorded). Evaluable: `completed` ones with a verdict, and
    the outcomes `scoring.outcome.owner` gives the agent: `agent_crash`
    (`agent_crash_after_fault`) or `timeout` (`timeout_after_fault`) whose last call
    delivered a visible fault, and `infra_error`s caused by a service 5xx to the agent's own
    call (`infra_error_agent_caused`); `reclassified` counts them per reason. The other
    crashes, timeouts and infra errors are counted apart as infrastructure."""

    total: int = 0
    evaluable: int = 0
    completed: int = 0
    agent_crash: int = 0
    timeout: int = 0
    infra_error: int = 0
    no_verdict: int = 0
    agent_crash_after_fault: int = 0
    timeout_after_fault: int = 0
    infra_error_agent_caused: int = 0
    reclassified: dict[str, int] = Field(default_factory=dict)
    """Outcomes other than `completed` scored as the agent's, per reason
    (crash_after_fault, timeout_after_fault, service_error_on_agent_call)."""

    @property
    def infrastructure(self) -> int:
        return (
            self.agent_crash
            - self.agent_crash_after_fault
            + self.timeout
            - self.timeout_after_fault
            + self.infra_error
            - self.infra_error_agent_caused
        )


class FaultTypeRecovery(BaseModel):
    """`rule`: "retry" (a later clean call of the same tool), "adapt" (a persistent fault:
    the episode succeeded), or "mixed" for the all-faults row."""

    fault: str
    encountered: int
    recovered: Estimate
    extra_calls: Estimate
    latency_steps: Estimate
    latency_s: Estimate
    rule: str = "retry"
    recovered_and_succeeded: Estimate = Field(default_factory=lambda: Estimate.na("not computed"))
    """DESIGN §6's stricter reading, beside `recovered` (docs/metrics.md's rule): recovered
    by the row's rule *and* the episode succeeded (n/a without verdicts)."""


class FaultKindDelivery(BaseModel):
    """One fault type under a profile: chosen by the engine, delivered to the agent."""

    fault: str
    drawn: int
    delivered: int
    nominal_rate: float | None
    realised_rate: Estimate


class ModelFaultDelivery(BaseModel):
    """The same over model calls (`kind: "model_call"`), kept apart from tool calls: a
    model call is not a step. `nominal_rate`: the profile's failure_rate when it weights a
    model fault, else 0 (the engine draws model faults among model faults only)."""

    model_calls: int
    nominal_rate: float | None
    realised_rate: Estimate
    drawn: int
    delivered: int
    by_fault: list[FaultKindDelivery]


class ConnectionFaultDelivery(BaseModel):
    """Connection-stage faults (SlowInitialize) over the requests that open an MCP
    connection (`initialize`, `server/discover`), apart from tool calls: the engine draws
    them per such request at the profile's failure_rate among connection faults only.
    `nominal_rate`: the failure_rate when the profile weights a connection fault, else 0."""

    connections: int
    nominal_rate: float | None
    realised_rate: Estimate
    drawn: int
    delivered: int
    by_fault: list[FaultKindDelivery]


class FaultDelivery(BaseModel):
    """Whether the profile's faults reached the agent, over the group's evaluable episodes.

    `realised_rate`: tool calls carrying a freshly drawn, delivered fault / tool calls
    (Wilson), beside `nominal_rate`: the profile's `failure_rate` when it weights a tool
    fault, else 0 (a profile of model faults only draws nothing on tool calls);
    `affected_rate` also counts calls a running incident (drift, stale data) was applied to
    again; `drawn`/`delivered` count fresh draws; `incident_delivered`: share of episodes
    whose planned incident (FIT v2) reached the agent at least once (n/a without an
    incident plan). `by_fault` holds tool faults; model faults are in `model`, connection-stage
    faults (SlowInitialize) in `connection`."""

    tool_calls: int
    nominal_rate: float | None
    realised_rate: Estimate
    affected_rate: Estimate
    drawn: int
    delivered: int
    by_fault: list[FaultKindDelivery]
    incident_episodes: int
    incident_delivered: Estimate
    model: ModelFaultDelivery | None = None
    connection: ConnectionFaultDelivery | None = None
    scope_steps: list[int] | None = None
    """The profile's step scope [from, to] (agentprop-p2: [1, 1]), None without one. With a
    scope, `nominal_rate` is the rate over the calls in scope spread over all tool calls
    (failure_rate × in-scope calls / tool calls), what the profile promises per call."""
    scope_calls: int = 0
    scope_episodes: int = 0
    scope_delivered: Estimate | None = None
    """Share of episodes with a call in the step scope in which a fault reached the agent
    within it (agentprop-p2: the first call's corruption landed); None without a scope."""


class HygieneItem(BaseModel):
    count: int
    affected: int
    episodes: Estimate


class Hygiene(BaseModel):
    retries: int
    ignored_retry_after: HygieneItem
    retried_non_retryable: HygieneItem
    retry_storms: HygieneItem
    duplicate_writes: HygieneItem
    uninjected_errors: int
    model_retries: int = 0
    """Retries of model calls (same endpoint, right after its failure), apart from
    `retries` (tool calls); like the two below, not part of QF (a model call is not a
    step)."""
    model_ignored_retry_after: HygieneItem | None = None
    model_retry_storms: HygieneItem | None = None


class StageIndicators(BaseModel):
    """AgentProp's stages, proxy-side: ParameterCorruption rewrites the call after the agent
    sent it, so S1 (corruption applied) holds by construction and `rejection_rate` is
    1 − P(S2 | S1), the agent re-issuing the call with the value it meant. The paper's own
    definitions are `ModelStageIndicators`."""

    s1: int
    s2: int
    s3_given_s2: int
    unjudged: int
    rejection_rate: Estimate
    recovery_rate: Estimate
    p_s3_given_s1: Estimate
    variant: str = "proxy-side: ParameterCorruption after the agent sent the call"


class ModelStageIndicators(BaseModel):
    """AgentProp-Bench §5.2–5.3 as the paper defines them, for ModelParameterCorruption (the
    model's planned tool call rewritten before the agent runs it); chaosproxy.scoring.agentprop.
    Counts over `n` evaluable episodes in which the fault was drawn; `landed`: of these, the
    ones whose model reply was rewritten. rejection = 1 − P(S1); recovery = 1 − r23."""

    n: int
    landed: int
    s1: int
    s2: int
    s3: int
    s3_given_s1: int
    s3_given_s2: int
    p_s1: Estimate
    p_s2: Estimate
    p_s3: Estimate
    r12: Estimate
    r23: Estimate
    p_s3_given_s1: Estimate
    rejection_rate: Estimate
    recovery_rate: Estimate
    variant: str = "model-stage: ModelParameterCorruption in the model's tool call (the paper's)"


class GroupMetrics(BaseModel):
    """One agent under one profile (all ε pooled unless said)."""

    run: str
    agent: str
    profile: str
    lam: float | None
    counts: Counts
    sr: Estimate
    sr_by_epsilon: dict[str, Estimate]
    fault_episodes: int
    frr: Estimate
    frr_ungraded: int
    pei: Estimate
    cn_frr: Estimate
    escalations: int
    adversarial_compliance: Estimate
    adversarial_unjudged: int
    stage: StageIndicators
    recovery: list[FaultTypeRecovery]
    recovery_all: FaultTypeRecovery
    hygiene: Hygiene
    pass_k: list[PassK]
    t_success_from_journal: int
    unchecked_quality_rules: list[str] = Field(default_factory=list)
    frr_no_recovery_needed: int = 0
    pei_success: Estimate = Field(default_factory=lambda: Estimate.na("not computed"))
    adversarial_attempted: Estimate = Field(default_factory=lambda: Estimate.na("not computed"))
    delivery: FaultDelivery | None = None
    model_recovery: list[FaultTypeRecovery] = Field(default_factory=list)
    """Recovery by model fault type (model calls), apart from `recovery` (tool calls)."""
    stage_model: ModelStageIndicators | None = None
    """AgentProp's stages at the paper's injection point; None: the fault was never drawn."""


class TierVerdict(BaseModel):
    """`status`: "tier", "below", "insufficient data" or "n/a"; `profiles`: what the
    FRR and PEI it used were pooled over."""

    tier: str | None
    text: str
    frr: Estimate
    pei: Estimate
    status: str = "n/a"
    profiles: list[str] = Field(default_factory=list)
    min_n: int = 0


class AgentSummary(BaseModel):
    run: str
    agent: str
    nominal_profile: str | None
    stressed_profiles: list[str]
    delta_rel: Estimate
    frr: Estimate
    pei: Estimate
    tier: TierVerdict
    surface: Surface
    delta_rel_excluded: list[str] = Field(default_factory=list)
    frr_no_recovery_needed: int = 0
    pei_success: Estimate = Field(default_factory=lambda: Estimate.na("not computed"))
    delta_rel_by_profile: dict[str, Estimate] = Field(default_factory=dict)
    """HB-Eval's Δ_rel against each fault-injected profile alone (λ0 − that profile)."""


class DomainRow(BaseModel):
    agent: str
    profile: str
    domain: str
    counts: Counts
    sr: Estimate
    frr: Estimate
    pei: Estimate
    pass_k: list[PassK]


class Comparison(BaseModel):
    """a − b for one metric."""

    metric: str
    a: str
    b: str
    profile_a: str
    profile_b: str
    diff: Estimate


class RunInfo(BaseModel):
    label: str
    path: str
    seed: int
    agent: str | None
    episode_records: int
    duplicate_records: int
    calls_without_episode: int
    provenance: list[FileProvenance]
    truncated: list[TruncatedLine] = Field(default_factory=list)


class LogEpisode(BaseModel):
    """One episode as calls.jsonl alone shows it. `faults`/`model_faults`: delivered faults
    the agent could see on tool / model calls; `recovered`: those of them a later clean call
    (same tool, same model endpoint) cleared: only retryable faults can be judged so."""

    episode: str
    tool_calls: int
    model_calls: int
    faults: int
    model_faults: int
    recovered: int
    retries: int
    ignored_retry_after: int
    uninjected_errors: int
    fault_types: list[str] = Field(default_factory=list)


class LogOnlyRun(BaseModel):
    """A run directory with calls.jsonl and no episodes.jsonl (`chaosproxy up`, or a proxy
    log): no task verdicts, so no success, SR, FRR, PEI, pass^k or tier (`not_computed`
    says so); fault delivery and the recovery that needs no verdict are computed over every
    episode in the log. `profile`: the one config.json records (`up`'s starting profile)."""

    label: str
    kind: str
    profile: str | None
    episodes: list[LogEpisode]
    delivery: FaultDelivery
    recovery: list[FaultTypeRecovery]
    recovery_all: FaultTypeRecovery
    model_recovery: list[FaultTypeRecovery]
    not_computed: str
    notes: list[str] = Field(default_factory=list)


class Results(BaseModel):
    schema_id: str = SCHEMA
    metrics_version: int | None = None
    """The definitions these numbers were computed under (METRICS_VERSION when scored; None
    in a results.json written before the field existed, i.e. version 1)."""
    runs: list[RunInfo]
    settings: dict[str, object]
    counts: Counts
    groups: list[GroupMetrics]
    agents: list[AgentSummary]
    domains: list[DomainRow]
    comparisons: list[Comparison]
    warnings: list[str] = Field(default_factory=list)
    log_only: list[LogOnlyRun] = Field(default_factory=list)
