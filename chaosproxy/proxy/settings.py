"""Limits and settings of the proxy, chosen on purpose and safe on a laptop.

Every limit is documented in docs/proxy.md; change one there when you change it here.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ProxyLimits(BaseModel):
    """Bounds that keep one bad client or one slow service from taking the proxy down."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    idle_timeout_s: float = Field(
        15.0,
        gt=0,
        description="A connection that has not sent a complete request head within this time "
        "(from connect or from the end of its last response) is closed: the keep-alive timeout "
        "and the header read deadline against slowloris clients.",
    )
    body_timeout_s: float = Field(30.0, gt=0, description="Deadline to receive a request body.")
    max_body_bytes: int = Field(10 * 1024 * 1024, gt=0, description="Bigger bodies get 413.")
    max_bodies_in_flight_bytes: int = Field(
        64 * 1024 * 1024,
        gt=0,
        description="Request body bytes held by all connections together (read, queued or "
        "being served); past it, connections receiving a body over 64 KiB stop being read "
        "until bodies are released, so large uploads wait and small calls go on.",
    )
    max_response_bytes: int = Field(
        64 * 1024 * 1024,
        gt=0,
        description="A service's reply read whole (any but an SSE stream) larger than this is "
        "a 502 `upstream_too_large`.",
    )
    max_line_size: int = Field(8190, gt=0, description="Longest request line / header line.")
    max_headers: int = Field(128, gt=0, description="Most header fields in one request.")
    upstream_connect_timeout_s: float = Field(5.0, gt=0, description="TCP connect to a service.")
    upstream_read_timeout_s: float = Field(
        60.0,
        gt=0,
        description="Longest silence while reading a service's response (SSE keep-alive "
        "pings reset it); 504 when it fires before any response was sent.",
    )
    upstream_pool_size: int = Field(
        256, gt=0, description="Most connections open to all services at once."
    )
    pool_wait_s: float = Field(
        5.0,
        gt=0,
        description="Longest wait for a free upstream connection; then 503, never a silent queue.",
    )
    upstream_keepalive_s: float = Field(
        15.0, gt=0, description="Idle upstream connections are closed after this time."
    )
    stream_idle_timeout_s: float = Field(
        600.0,
        gt=0,
        description="A long-lived MCP GET stream with no event for this long is closed.",
    )
    max_idle_episodes: int = Field(
        256,
        ge=1,
        description="Most idle episodes (no request in flight) the proxy and its fault engine "
        "keep; the least recently used beyond it is forgotten and starts afresh if it comes "
        "back (`up --idle-episodes`).",
    )
    default_episode_calls: int = Field(
        0,
        ge=0,
        description="Calls without an episode id form rolling episodes of this many tool "
        "calls, each with fresh fault draws (`up --default-episode-calls`, default 6 there); "
        "0: they are one endless episode `default`.",
    )
    episode_idle_ttl_s: float = Field(
        0.0,
        ge=0,
        description="Idle episodes are also forgotten after this many seconds; 0: no time "
        "limit (`up --episode-idle-ttl`).",
    )
    provider_retries: int = Field(
        3,
        ge=0,
        description="A model call the real provider answered 429 or 5xx (500, 502, 503, 504, "
        "529; not an injected fault) is sent again up to this many times, before any byte "
        "reached the agent (`--provider-retries`; 0: never).",
    )
    provider_backoff_s: float = Field(
        0.5,
        ge=0,
        description="The first re-send's wait when the provider sent no Retry-After; doubled "
        "for each further re-send.",
    )
    provider_retry_max_wait_s: float = Field(
        30.0,
        ge=0,
        description="Longest wait before one re-send, the provider's Retry-After included.",
    )
    upstream_ca_file: str | None = Field(
        None,
        description="PEM file of CAs trusted for https upstreams, besides the system's "
        "(`up --upstream-ca`).",
    )
    upstream_resolve: dict[str, str] = Field(
        default_factory=dict,
        description="`host:port` -> `addr:port`: connect there instead of resolving the host, "
        "certificate still checked for the host (like curl --resolve; forward-mode `--allow "
        "HOST=ADDR:PORT`).",
    )
