"""Customer support: tickets, SLAs, a knowledge base and tier-2 escalation."""

from chaosproxy.domains.support import tasks as tasks
from chaosproxy.domains.support.tools import domain

__all__ = ["domain"]
