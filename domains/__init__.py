"""The domain services, installed as chaosproxy.domains: tool APIs with per-episode state."""
