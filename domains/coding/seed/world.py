"""The default world: every seed repository, untouched."""

from chaosproxy.domains.coding.seed.authsvc import authsvc
from chaosproxy.domains.coding.seed.ledger import ledger
from chaosproxy.domains.coding.seed.legacy import billing, geo
from chaosproxy.domains.coding.seed.security_repos import calc, opsbackup, payments, reportdb
from chaosproxy.domains.coding.seed.small import inventory, shopcart, textkit
from chaosproxy.domains.coding.state import CodingState, Repository

BUILDERS = (
    authsvc,
    billing,
    calc,
    geo,
    inventory,
    ledger,
    opsbackup,
    payments,
    reportdb,
    shopcart,
    textkit,
)


def make_default_state(**replace: Repository) -> CodingState:
    """Every repository; `replace` swaps in variants (e.g. other hidden tests) by name."""
    repositories = {repo.name: repo for repo in (build() for build in BUILDERS)}
    repositories.update(replace)
    return CodingState(repositories=repositories)
