"""Healthcare domain (HB-Eval §5.2.1): drug database, interactions, dosing, two-source
patient records, prescriptions and treatment plans; contradictions call for escalation."""

from chaosproxy.domains.healthcare import tasks_info, tasks_treatment, tools_clinical, tools_orders
from chaosproxy.domains.healthcare.domain import domain

__all__ = ["domain", "tasks_info", "tasks_treatment", "tools_clinical", "tools_orders"]
