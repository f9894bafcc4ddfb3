"""Shared test settings. Each area keeps its fixtures in its own tests/<area>/conftest.py."""
