"""The mitmproxy addon behind `up --forward-port`: allowed hosts go to the reverse proxy.

Runs inside mitmproxy's own virtual environment (`mitmdump -s addon.py`), so it imports only
the standard library and mitmproxy, never chaosproxy. For a request to an allowed origin it
rewrites the destination to chaosproxy's reverse proxy as `/{host}/{path}` with the episode in
`X-Chaos-Episode`; the reverse proxy, which has each allowed host as an upstream, injects the
faults, logs the call and talks to the real host. Everything else gets 403 naming the
allowlist, and CONNECT to a host not allowed is refused before any TLS: never an open proxy.

Configuration: `--set chaos_config=FILE`, a JSON file
`{"reverse": "http://127.0.0.1:PORT", "allow": [{"scheme", "host", "port"}],
"default_episode": "default", "ready_file": PATH}`.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mitmproxy import ctx, http

EPISODE_HEADER = "X-Chaos-Episode"


def _proxy_user(headers: Any) -> str | None:
    """The user name of a `Proxy-Authorization: Basic ...` header, if any."""
    value = headers.get("Proxy-Authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "basic" or not token:
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user = decoded.partition(":")[0]
    return user or None


class ChaosForward:
    def __init__(self) -> None:
        self.allowed: set[tuple[str, str, int]] = set()
        self.origins: list[str] = []
        self.reverse_host = "127.0.0.1"
        self.reverse_port = 0
        self.default_episode = "default"
        self.ready_file: Path | None = None
        self.connect_users: dict[str, str] = {}

    def load(self, loader: Any) -> None:
        loader.add_option("chaos_config", str, "", "chaosproxy forward-mode configuration file")

    def configure(self, updated: set[str]) -> None:
        if "chaos_config" not in updated or not ctx.options.chaos_config:
            return
        config = json.loads(Path(ctx.options.chaos_config).read_text(encoding="utf-8"))
        reverse = urlsplit(config["reverse"])
        self.reverse_host = reverse.hostname or "127.0.0.1"
        self.reverse_port = reverse.port or 80
        self.allowed = {(a["scheme"], a["host"], int(a["port"])) for a in config["allow"]}
        self.origins = list(config["origins"])
        self.default_episode = config.get("default_episode") or "default"
        ready = config.get("ready_file")
        self.ready_file = Path(ready) if ready else None

    def running(self) -> None:
        """Tell the parent where we listen (the port may have been 0)."""
        if self.ready_file is None:
            return
        addrs = ctx.master.addons.get("proxyserver").listen_addrs()
        ports = sorted({addr[1] for addr in addrs})
        tmp = self.ready_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"ports": ports}), encoding="utf-8")
        tmp.replace(self.ready_file)

    def _refuse(self, flow: http.HTTPFlow, host: str, port: int, what: str) -> None:
        body = {
            "error": "host_not_allowed",
            "message": f"{what}{host}:{port} is not allowed through this chaosproxy forward "
            "proxy; allowed: " + (", ".join(self.origins) or "nothing"),
            "host": host,
            "port": port,
            "allowed": self.origins,
        }
        flow.response = http.Response.make(
            403, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )

    def http_connect(self, flow: http.HTTPFlow) -> None:
        host, port = flow.request.host.lower(), flow.request.port
        if not any(h == host and p == port for _, h, p in self.allowed):
            self._refuse(flow, host, port, "CONNECT to ")
            return
        user = _proxy_user(flow.request.headers)
        if user is not None:
            self.connect_users[flow.client_conn.id] = user

    def client_disconnected(self, client: Any) -> None:
        self.connect_users.pop(client.id, None)

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        request = flow.request
        if request.method == "CONNECT":
            return
        scheme, host, port = request.scheme, request.host.lower(), request.port
        if (scheme, host, port) not in self.allowed:
            self._refuse(flow, host, port, f"{scheme}://")
            return
        episode = request.headers.get(EPISODE_HEADER) or _proxy_user(request.headers)
        episode = episode or self.connect_users.get(flow.client_conn.id) or self.default_episode
        request.headers.pop("Proxy-Authorization", None)
        request.headers[EPISODE_HEADER] = episode
        path = request.path if request.path.startswith("/") else "/" + request.path
        request.scheme = "http"
        request.host = self.reverse_host
        request.port = self.reverse_port
        request.path = f"/{host}{path}"
        request.stream = True

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None:
            flow.response.stream = True

    def error(self, flow: http.HTTPFlow) -> None:
        """The reverse proxy dropped the connection (a reset or lost-reply fault): drop ours.

        mitmproxy would answer 502 instead; killing the flow closes the agent's connection,
        which is what an agent on the reverse proxy sees. A reverse proxy that cannot be
        reached at all still gives mitmproxy's 502.
        """
        reached = flow.server_conn is not None and flow.server_conn.timestamp_tcp_setup
        if reached and flow.killable:
            flow.kill()
        else:
            logging.warning("chaosproxy forward: %s %s", flow.request.url, flow.error)


addons = [ChaosForward()]
