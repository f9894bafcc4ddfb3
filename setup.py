"""Package discovery only; everything else is in pyproject.toml.

domains/, agents/ and profiles/ live at the top of the repository but are installed
as chaosproxy.domains, chaosproxy.agents and chaosproxy.profiles, so the package list
is computed here rather than written out by hand.
"""

from setuptools import find_packages, setup

MAPPED = {
    "chaosproxy.domains": "domains",
    "chaosproxy.agents": "agents",
    "chaosproxy.profiles": "profiles",
}

packages = find_packages(include=["chaosproxy", "chaosproxy.*"])
for namespace, folder in MAPPED.items():
    packages.append(namespace)
    packages += [f"{namespace}.{sub}" for sub in find_packages(folder)]

setup(packages=packages)
