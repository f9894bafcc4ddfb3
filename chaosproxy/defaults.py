"""Defaults every entry point shares (no imports: the pytest plugin loads this cheaply)."""

DEFAULT_SEED = 7
"""The run seed when none is given: the same for `run`, `up`, `reproduce`, the pytest plugin,
the Python API and compose, so the same command gives the same faults wherever it runs."""
