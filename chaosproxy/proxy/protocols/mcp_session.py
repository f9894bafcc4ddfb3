"""What the proxy remembers of MCP sessions: the ones a fault made it forget, and what
each session was last shown of its tool list (to announce `tools/list_changed` once).

Bounded (the agent is untrusted and may open sessions without end): the oldest entries go
first; a forgotten entry only means a forgotten session is served again, or an
announcement is sent once more.
"""

from __future__ import annotations

from collections import OrderedDict

SESSION_HEADER = "Mcp-Session-Id"
LIMIT = 4096

SessionKey = tuple[str, str, str]
"""(episode, domain, Mcp-Session-Id)."""


class SessionBook:
    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._expired: OrderedDict[SessionKey, str] = OrderedDict()
        self._shown: OrderedDict[SessionKey, frozenset[str]] = OrderedDict()

    def expire(self, key: SessionKey, fault: str) -> None:
        """From now on every request of this session gets a 404 (`fault` made it so)."""
        self._expired[key] = fault
        while len(self._expired) > self.limit:
            self._expired.popitem(last=False)

    @property
    def any_expired(self) -> bool:
        """Whether any session was forgotten (most runs: none, and no key is built)."""
        return bool(self._expired)

    def expired(self, key: SessionKey) -> str | None:
        return self._expired.get(key)

    def shown(self, key: SessionKey, marks: frozenset[str]) -> None:
        """The session was just shown the tool list that `marks` shapes (a tools/list)."""
        self._shown[key] = marks
        self._shown.move_to_end(key)
        while len(self._shown) > self.limit:
            self._shown.popitem(last=False)

    def announce(self, key: SessionKey, marks: frozenset[str]) -> bool:
        """Whether the tool list changed since the session last saw it; if so, it is now
        announced (the caller sends `notifications/tools/list_changed`)."""
        if self._shown.get(key, frozenset()) == marks:
            return False
        self.shown(key, marks)
        return True
