"""Logistics domain (HB-Eval §5.2.2): routing, traffic, fuel, fleet, inventory, rail."""

from chaosproxy.domains.logistics import (
    tasks_routing,
    tasks_stock,
    tools_fleet,
    tools_routing,
    tools_stock,
)
from chaosproxy.domains.logistics.domain import domain

__all__ = ["domain", "tasks_routing", "tasks_stock", "tools_fleet", "tools_routing", "tools_stock"]
