"""The domain services (installed as chaosproxy.domains): realistic tool APIs with per-episode state."""
