"""An environment's settings, checked once: the one place where a profile, the domains,
upstreams, services, OpenAPI documents, ports, episode limits, the forward proxy and
tracing are validated.

`check_settings(...)` takes what a caller gives (`chaosproxy.Environment(...)`'s
keywords, which `up`, `run` and the pytest plugin pass on from their flags) and returns a
frozen `EnvironmentSettings`, or raises a `SetupError` naming what is wrong. Everything
behind it (the private `chaosproxy.proxy.environment`, the proxy server, the forward
proxy, tracing) takes the typed object and checks nothing again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chaosproxy.api.errors import ProfileError, SetupError, UnknownDomainError
from chaosproxy.api.options import ControlSettings, ForwardSettings
from chaosproxy.defaults import DEFAULT_SEED
from chaosproxy.domains.registry import UnknownDomainError as RegistryUnknown
from chaosproxy.domains.registry import domain_names, get_domain
from chaosproxy.faults.profile import Profile
from chaosproxy.forward.allowlist import AllowError
from chaosproxy.forward.plan import ForwardPlan, PlanError
from chaosproxy.profiles import ProfileError as LoaderError
from chaosproxy.profiles import load_profile as load_shipped
from chaosproxy.proxy.episodes import DEFAULT_EPISODE_CALLS
from chaosproxy.proxy.routing import valid_name
from chaosproxy.proxy.settings import ProxyLimits
from chaosproxy.tracing import TraceSettings
from chaosproxy.tracing.setup import trace_settings


class EnvironmentSettings(BaseModel):
    """Everything an environment is started with, already checked (build it with
    `check_settings`). `domains` are started here, `services` are built-in domains served
    elsewhere, `upstreams` are the caller's services and the forward proxy's allowed hosts;
    `limits` carries the episode limits and the upstream CA/pins; `run_dir` None means a
    temporary directory chosen at start."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    domains: list[str]
    upstreams: dict[str, str]
    services: dict[str, str]
    openapi: dict[str, str]
    profile: Profile
    seed: int
    port: int = Field(ge=0, le=65535)
    host: str
    run_dir: Path | None
    limits: ProxyLimits
    control: ControlSettings
    forward: ForwardPlan
    episode_credentials: bool
    tracing: TraceSettings | None

    @property
    def builtin_domains(self) -> list[str]:
        """Domains with an oracle: the ones started here and the ones served elsewhere."""
        return [*self.domains, *self.services]


def check_settings(
    *,
    domains: Sequence[str] | str | None = None,
    upstreams: Mapping[str, str] | None = None,
    profile: str | Path | Profile = "lambda0.2",
    seed: int = DEFAULT_SEED,
    run_dir: str | Path | None = None,
    port: int = 0,
    host: str = "127.0.0.1",
    services: Mapping[str, str] | None = None,
    openapi: Mapping[str, str | Path] | None = None,
    upstream_ca: str | Path | None = None,
    idle_episodes: int = 256,
    episode_idle_ttl: float = 0.0,
    default_episode_calls: int | None = None,
    control: ControlSettings | None = None,
    forward: ForwardSettings | None = None,
    episode_credentials: bool = False,
    otlp_endpoint: str | None = None,
    otlp_content: str | None = None,
    provider_retries: int | None = None,
) -> EnvironmentSettings:
    """The settings of `chaosproxy.Environment(...)` (its docstring says what each means),
    checked before anything starts."""
    if isinstance(domains, str):
        domains = [part.strip() for part in domains.split(",") if part.strip()]
    loaded = load_profile(profile)
    own = check_upstreams(upstreams or {})
    external = check_services(services or {})
    ca = Path(upstream_ca) if upstream_ca is not None else None
    plan = forward_plan(forward, loaded, ca)
    elsewhere = own or external or plan.enabled
    chosen = check_domains(
        domains if domains is not None else ([] if elsewhere else domain_names())
    )
    clash = sorted((set(chosen) & set(own)) | (set(external) & (set(chosen) | set(own))))
    if clash:
        raise SetupError(f"upstream names clash with built-in domains: {', '.join(clash)}")
    try:
        own.update(plan.upstreams(taken=[*own, *chosen, *external]))
    except ValueError as bad:
        raise SetupError(str(bad)) from None
    if not chosen and not own and not external:
        raise SetupError("nothing to serve: give domains, upstreams, services or forward")
    documents = {name: str(source) for name, source in (openapi or {}).items()}
    unknown = sorted(set(documents) - set(own))
    if unknown:
        raise SetupError(f"openapi for unknown upstream(s): {', '.join(unknown)}")
    calls = DEFAULT_EPISODE_CALLS if default_episode_calls is None else default_episode_calls
    arguments = {
        "max_idle_episodes": "idle_episodes",
        "episode_idle_ttl_s": "episode_idle_ttl",
        "default_episode_calls": "default_episode_calls",
        "provider_retries": "provider_retries",
    }
    provider = {} if provider_retries is None else {"provider_retries": provider_retries}
    try:
        limits = plan.limits(
            max_idle_episodes=idle_episodes,
            episode_idle_ttl_s=episode_idle_ttl,
            default_episode_calls=calls,
            **provider,
        )
        return EnvironmentSettings(
            domains=chosen,
            upstreams=own,
            services=external,
            openapi=documents,
            profile=loaded,
            seed=seed,
            port=port,
            host=host,
            run_dir=Path(run_dir) if run_dir is not None else None,
            limits=limits,
            control=control or ControlSettings(),
            forward=plan,
            episode_credentials=episode_credentials,
            tracing=trace_settings(otlp_endpoint, otlp_content),
        )
    except ValidationError as bad:
        raise SetupError(_explain(bad, arguments)) from None


def _explain(bad: ValidationError, names: Mapping[str, str]) -> str:
    """pydantic's errors as one line naming the caller's arguments."""
    return "; ".join(
        f"{names.get(str(error['loc'][0]), error['loc'][0]) if error['loc'] else 'settings'}: "
        f"{error['msg']}, got {error.get('input')!r}"
        for error in bad.errors()
    )


def load_profile(name: str | Path | Profile) -> Profile:
    """A shipped profile by name or a YAML file, or ProfileError naming what is wrong."""
    if isinstance(name, Profile):
        return name
    try:
        return load_shipped(name)
    except (LoaderError, OSError, ValueError) as bad:
        raise ProfileError(str(bad)) from None


def check_domains(names: Sequence[str]) -> list[str]:
    """Installed domain names, or UnknownDomainError naming the unknown one."""
    for name in names:
        try:
            get_domain(name)
        except RegistryUnknown as unknown:
            raise UnknownDomainError(str(unknown)) from None
    return list(names)


def check_upstream(name: str, url: str, label: str = "upstream") -> tuple[str, str]:
    """An upstream's name (a path segment the proxy can route) and its http(s) base URL."""
    shown = f"{label} {name}={url!r}"
    if not valid_name(name) or name in {"e", "_chaos"}:
        raise SetupError(f"{shown}: invalid name {name!r} (letters, digits, _.-~)")
    if not url.startswith(("http://", "https://")):
        raise SetupError(f"{shown}: URL must start with http:// or https://")
    return name, url.rstrip("/")


def check_upstreams(upstreams: Mapping[str, str]) -> dict[str, str]:
    return dict(check_upstream(name, url) for name, url in upstreams.items())


def check_services(services: Mapping[str, str]) -> dict[str, str]:
    """Built-in domains served elsewhere: known domain names with http(s) URLs."""
    check_domains(list(services))
    return dict(check_upstream(name, url, "services") for name, url in services.items())


def forward_plan(
    forward: ForwardSettings | None, profile: Profile, upstream_ca: Path | None
) -> ForwardPlan:
    """The forward proxy's allowlist and upstream settings."""
    try:
        if forward is None:
            return ForwardPlan.from_flags(None, (), (), upstream_ca)
        return ForwardPlan.from_flags(forward.port, list(forward.allow), profile.allow, upstream_ca)
    except (PlanError, AllowError) as bad:
        raise SetupError(str(bad)) from None
