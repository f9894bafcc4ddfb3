"""Shared test settings. Each area keeps its fixtures in its own tests/<area>/conftest.py."""

# pytester drives inner pytest sessions in tests/plugin; it must be declared in the top conftest.
pytest_plugins = ["pytester"]
