"""chaosproxy: chaos engineering for tool-using LLM agents."""

__version__ = "0.1.0"
