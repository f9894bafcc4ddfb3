"""Inner pytest sessions (pytester) start in a bare folder without the project's settings."""

import pytest


@pytest.fixture(autouse=True)
def _inner_asyncio_scope(request: pytest.FixtureRequest) -> None:
    """Give every inner session pytest-asyncio's loop scope, as pyproject.toml does ours,
    so they do not warn; a test that writes its own pytest.ini sets it there."""
    if "pytester" in request.fixturenames:
        pytester: pytest.Pytester = request.getfixturevalue("pytester")
        pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
