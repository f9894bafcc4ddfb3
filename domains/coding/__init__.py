"""The coding domain (HB-Eval §5.2): sandboxed code tools over small in-memory repositories."""

from chaosproxy.domains.coding import tasks, tools_checks, tools_files
from chaosproxy.domains.coding.domain import domain

__all__ = ["domain", "tasks", "tools_checks", "tools_files"]
