"""The fault-injecting reverse proxy (REST + MCP aware).

Environments (services + engine + proxy) start through the public `chaosproxy.Environment`;
`chaosproxy.proxy.environment` is the private implementation behind it.
"""

from chaosproxy.proxy.server import ProxyServer
from chaosproxy.proxy.settings import ProxyLimits

__all__ = ["ProxyLimits", "ProxyServer"]
