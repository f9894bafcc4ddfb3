"""What `up --forward-port/--allow/--upstream-ca` adds to an environment, checked up front.

`up` calls this with its flags: the allowed hosts become reverse-proxy upstreams (so the
engine, the identity rules and the log are the reverse proxy's), the proxy's upstream
settings get the CA file and the `HOST=ADDR:PORT` pins, and `serve()` runs mitmdump beside
the started environment.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaosproxy.errors import ChaosError
from chaosproxy.forward.allowlist import Allowlist
from chaosproxy.forward.server import ForwardProxy
from chaosproxy.proxy.settings import ProxyLimits


class PlanError(ChaosError, ValueError):
    """Flags that do not fit together; the message names them."""


@dataclass(frozen=True)
class ForwardPlan:
    port: int | None
    allowlist: Allowlist
    upstream_ca: Path | None = None

    @classmethod
    def from_flags(
        cls,
        port: int | None,
        allow: Sequence[str],
        profile_allow: Sequence[str] = (),
        upstream_ca: Path | None = None,
    ) -> ForwardPlan:
        if allow and port is None:
            raise PlanError("--allow needs --forward-port (the forward proxy's port)")
        allowlist = Allowlist([*allow, *(a for a in profile_allow if a not in allow)])
        if port is not None and not allowlist:
            raise PlanError(
                "--forward-port needs at least one --allow HOST (or `allow:` in the profile); "
                "the forward proxy is never open"
            )
        if upstream_ca is not None and not upstream_ca.is_file():
            raise PlanError(f"--upstream-ca {upstream_ca}: no such file")
        return cls(port, allowlist if port is not None else Allowlist([]), upstream_ca)

    @property
    def enabled(self) -> bool:
        return self.port is not None

    def upstreams(self, taken: Sequence[str] = ()) -> dict[str, str]:
        clash = sorted(set(self.allowlist.upstreams()) & set(taken))
        if clash:
            raise PlanError(f"allowed hosts clash with --upstream names: {', '.join(clash)}")
        return self.allowlist.upstreams()

    def limits(self, **settings: Any) -> ProxyLimits:
        """The proxy's limits with this plan's CA file and host pins, and `settings`."""
        return ProxyLimits(
            upstream_ca_file=str(self.upstream_ca) if self.upstream_ca else None,
            upstream_resolve=self.allowlist.resolve_map(),
            **settings,
        )

    @contextlib.asynccontextmanager
    async def serve(
        self, reverse_url: str, run_dir: Path, host: str
    ) -> AsyncIterator[ForwardProxy | None]:
        if self.port is None:
            yield None
            return
        async with ForwardProxy(
            allowlist=self.allowlist,
            reverse_url=reverse_url,
            run_dir=run_dir,
            host=host,
            port=self.port,
        ) as proxy:
            yield proxy
