"""What an MCP client's OAuth discovery asks the proxy after a 401 (`Unauthorized`).

An SDK configured for OAuth answers a 401 by looking for an authorization server: the
protected-resource metadata (RFC 9728), the authorization-server metadata (RFC 8414, or
OpenID's), then dynamic registration at `/register`. The proxy has no authorization
server: each of these gets a JSON 404 saying so and what to do, so the client's flow stops
at discovery or registration with that message, and never reaches a browser redirect that
would wait for ever. (An `Unauthorized` is recovered by reconnecting with the credentials
the client was given; see docs/faults.md.)
"""

from __future__ import annotations

from typing import Any

WELL_KNOWN = (
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
)
ENDPOINTS = frozenset({"/register", "/authorize", "/token"})
DESCRIPTION = (
    "chaosproxy has no authorization server: a 401 here is an injected Unauthorized fault "
    "(the token expired). Reconnect with the credentials you were given."
)


def is_oauth_path(path: str) -> bool:
    return path in ENDPOINTS or any(
        path == prefix or path.startswith(prefix + "/") for prefix in WELL_KNOWN
    )


def oauth_answer(raw_path: str) -> dict[str, Any] | None:
    """The body of the proxy's 404 to an OAuth discovery or registration request; None
    otherwise."""
    if not is_oauth_path(raw_path):
        return None
    return {"error": "no_authorization_server", "error_description": DESCRIPTION}
