"""Baseline agents (installed as chaosproxy.agents); they reach tools only over HTTP or MCP."""
