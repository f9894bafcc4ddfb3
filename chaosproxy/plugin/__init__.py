"""The pytest plugin's parts; `chaosproxy.pytest_plugin` holds the hooks and fixtures."""
