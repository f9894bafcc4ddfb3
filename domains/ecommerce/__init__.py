"""E-commerce: catalogue, stock, orders with coupons and returns (ReliabilityBench A.4)."""

from chaosproxy.domains.ecommerce import tasks as tasks
from chaosproxy.domains.ecommerce.tools import domain

__all__ = ["domain"]
