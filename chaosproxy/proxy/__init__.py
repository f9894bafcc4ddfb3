"""The fault-injecting reverse proxy (REST + MCP aware) and the environment around it."""

from chaosproxy.proxy.environment import Endpoints, Environment, SetupError
from chaosproxy.proxy.server import ProxyServer
from chaosproxy.proxy.settings import ProxyLimits

__all__ = ["Endpoints", "Environment", "ProxyLimits", "ProxyServer", "SetupError"]
