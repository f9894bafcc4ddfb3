"""results.json: every number the scorer computes, with its n and 95 % interval."""

from __future__ import annotations

from pydantic import BaseModel, Field

from chaosproxy.scoring.estimate import Estimate
from chaosproxy.scoring.passk import PassK, Surface
from chaosproxy.scoring.rundir import FileProvenance

SCHEMA = "chaosproxy.results/1"


class Counts(BaseModel):
    """Episodes by outcome; only `completed` ones with a verdict are evaluable."""

    total: int = 0
    evaluable: int = 0
    completed: int = 0
    agent_crash: int = 0
    timeout: int = 0
    infra_error: int = 0
    no_verdict: int = 0


class FaultTypeRecovery(BaseModel):
    fault: str
    encountered: int
    recovered: Estimate
    extra_calls: Estimate
    latency_steps: Estimate
    latency_s: Estimate


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


class StageIndicators(BaseModel):
    s1: int
    s2: int
    s3_given_s2: int
    unjudged: int
    rejection_rate: Estimate
    recovery_rate: Estimate
    p_s3_given_s1: Estimate


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


class TierVerdict(BaseModel):
    tier: str | None
    text: str
    frr: Estimate
    pei: Estimate


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


class Results(BaseModel):
    schema_id: str = SCHEMA
    runs: list[RunInfo]
    settings: dict[str, object]
    counts: Counts
    groups: list[GroupMetrics]
    agents: list[AgentSummary]
    domains: list[DomainRow]
    comparisons: list[Comparison]
