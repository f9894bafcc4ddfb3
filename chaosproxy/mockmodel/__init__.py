"""`chaosproxy mock-model`: a deterministic OpenAI-compatible model for offline runs."""
