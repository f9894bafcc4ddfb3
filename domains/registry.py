"""Find the domains: every subpackage of chaosproxy.domains (except the kit) exposing `domain`.

Discovery walks the installed package path, so a new domain folder is picked up without
being listed anywhere; the order is by name, so runs and tables are deterministic.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any

import chaosproxy.domains as domains_package
from chaosproxy.domains.kit.declare import Domain

from chaosproxy.errors import UnknownDomainError

NOT_DOMAINS = frozenset({"kit"})


@cache
def _discover() -> tuple[Domain[Any], ...]:
    found: dict[str, Domain[Any]] = {}
    for module_info in sorted(pkgutil.iter_modules(domains_package.__path__), key=lambda m: m.name):
        if not module_info.ispkg or module_info.name in NOT_DOMAINS:
            continue
        module_name = f"{domains_package.__name__}.{module_info.name}"
        try:
            module = importlib.import_module(module_name)
        except Exception as error:
            raise RuntimeError(
                f"domain package {module_name} failed to import: {error!r}"
            ) from error
        domain = getattr(module, "domain", None)
        if domain is None:
            continue
        if not isinstance(domain, Domain):
            raise TypeError(f"{module_name}.domain is a {type(domain).__name__}, not a kit Domain")
        if domain.name in found:
            raise ValueError(f"domain name {domain.name!r} is declared twice ({module_name})")
        found[domain.name] = domain
    return tuple(found[name] for name in sorted(found))


def all_domains() -> list[Domain[Any]]:
    """Every registered domain, sorted by name."""
    return list(_discover())


def domain_names() -> list[str]:
    return [domain.name for domain in _discover()]


def get_domain(name: str) -> Domain[Any]:
    """The domain called `name`; UnknownDomainError (listing the known names) otherwise."""
    for domain in _discover():
        if domain.name == name:
            return domain
    known = domain_names()
    message = f"unknown domain {name!r}; known domains: {', '.join(known) or '(none)'}"
    raise UnknownDomainError(message, name=name, known=known)
