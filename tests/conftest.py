"""Shared test settings. Each area keeps its fixtures in its own tests/<area>/conftest.py."""

from pathlib import Path

import pytest

# pytester drives inner pytest sessions in tests/plugin; it must be declared in the top conftest.
pytest_plugins = ["pytester"]

# The test command runs the suite on two pytest-xdist workers (`-n 2 --dist loadgroup`,
# scripts/test.sh). Each test file is one xdist group, so its module fixtures (servers, real
# runs) start once, on one worker. Tests that share one outside resource across files are one
# group, so one worker runs them one after another: the Ray cluster, the podman containers
# (one compose project name), the Phoenix backend. Keyed by path under tests/, a folder or a
# file.
XDIST_GROUPS = {
    "scale": "ray",
    "compose/test_compose_containers.py": "containers",
    "tracing/test_otel_e2e.py": "phoenix",
}
HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give each test its xdist group (before xdist reads them): its XDIST_GROUPS entry, else
    its file. A test that names its own group (`@pytest.mark.xdist_group`) keeps that one."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        try:
            where = item.path.relative_to(HERE).as_posix()
        except ValueError:
            continue  # an inner pytester session's own tests
        group = next(
            (
                name
                for prefix, name in XDIST_GROUPS.items()
                if where == prefix or where.startswith(prefix + "/")
            ),
            where,
        )
        item.add_marker(pytest.mark.xdist_group(group))
