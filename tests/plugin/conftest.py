"""Fixtures of the public API and pytest plugin tests."""

pytest_plugins = ["pytester"]
