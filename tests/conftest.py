"""Shared test settings. Each area keeps its fixtures in its own tests/<area>/conftest.py."""

from pathlib import Path

import pytest

# pytester drives inner pytest sessions in tests/plugin; it must be declared in the top conftest.
pytest_plugins = ["pytester"]

# The test command runs the suite on two pytest-xdist workers (`-n 2 --dist loadgroup`,
# scripts/test.sh). Tests that share one outside resource run in one group, so one worker
# runs them one after another: the Ray cluster, the podman containers (one compose project
# name), the Phoenix backend. Keyed by path under tests/, a folder or a file.
XDIST_GROUPS = {
    "scale": "ray",
    "compose/test_compose_containers.py": "containers",
    "tracing/test_otel_e2e.py": "phoenix",
}
HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put each test under a path of XDIST_GROUPS in its xdist group (before xdist reads them)."""
    for item in items:
        try:
            where = item.path.relative_to(HERE).as_posix()
        except ValueError:
            continue  # an inner pytester session's own tests
        for prefix, group in XDIST_GROUPS.items():
            if where == prefix or where.startswith(prefix + "/"):
                item.add_marker(pytest.mark.xdist_group(group))
