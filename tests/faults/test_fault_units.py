"""A fault is one unit, registered once: everything else derives from the registry.

The toy test adds a fault the way a contributor would (a `FaultUnit` subclass and one
entry in `kinds.UNITS`) and shows, with no other edit, that the catalogue, the profile
schema, the engine and the scorer's lists all know it. It runs in a fresh interpreter, so
the registry it extends is never seen by other tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, get_args

from chaosproxy.faults import catalog
from chaosproxy.faults.kinds import UNITS
from chaosproxy.faults.models import Params, Stage, Target
from chaosproxy.faults.unit import FaultUnit
from chaosproxy.scoring import faultnames

TOY = textwrap.dedent(
    """
    import importlib, json

    from pydantic import Field

    import chaosproxy.faults.kinds as kinds
    from chaosproxy.faults.models import CallContext, Params
    from chaosproxy.faults.responses import error_response
    from chaosproxy.faults.unit import Applied, BeforeCall, FaultUnit


    class TeapotParams(Params):
        status: int = Field(418, ge=400, le=599)


    class Teapot(FaultUnit):
        name = "Teapot"
        params = TeapotParams
        stage = "before"
        recoverable = False
        retryable = False
        summary = "the service is a teapot"

        def before(self, call: BeforeCall) -> Applied | None:
            status = call.settings(TeapotParams).status
            return call.respond(error_response(status, call.call_salt, message="teapot"))


    # the one edit a contributor makes: register the unit
    kinds.UNITS = (*kinds.UNITS, Teapot())

    # every module that derives from the registry, re-run as at start-up
    import chaosproxy.faults.catalog as catalog
    import chaosproxy.faults.profile as profile
    import chaosproxy.faults.engine as engine
    import chaosproxy.scoring.faultnames as faultnames
    import chaosproxy.scoring.calls as calls
    for module in (catalog, profile, engine, faultnames, calls):
        importlib.reload(module)

    schema = profile.Profile.model_json_schema()
    params_schema = schema["$defs"]["FaultParams"]["properties"]
    chosen = profile.Profile.model_validate(
        {"name": "toy", "failure_rate": 1.0, "weights": {"Teapot": 1},
         "params": {"Teapot": {"status": 451}}}
    )
    decision = engine.FaultEngine(chosen, seed=1).before_call(
        CallContext(episode="e", step=1, domain="d", tool="t")
    )
    hit = calls.FaultHit(name="Teapot", step=1, tool="t", t_reply=0.0, recoverable=False,
                         idempotent=None, harmful=None, arguments=None, visible=True)
    print(json.dumps({
        "names": list(catalog.FAULT_NAMES),
        "non_retryable": sorted(catalog.NON_RETRYABLE_FAULTS),
        "schema_fault": "Teapot" in params_schema,
        "schema_weights": "Teapot" in str(schema["$defs"]["FaultParams"]),
        "action": decision.action,
        "status": decision.response.status if decision.response else None,
        "fault": decision.fault.name if decision.fault else None,
        "scorer_known": list(faultnames.KNOWN),
        "scorer_canonical": faultnames.canonical("tea-pot"),
        "scorer_non_retryable": sorted(faultnames.NON_RETRYABLE),
        "scorer_retryable": hit.retryable,
    }))
    """
)


def run_toy() -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", TOY], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_toy_fault_registered_once_reaches_catalogue_schema_engine_and_scorer() -> None:
    assert "Teapot" not in catalog.FAULT_NAMES  # the registry this session uses is untouched
    toy = run_toy()
    assert toy["names"] == [*catalog.FAULT_NAMES, "Teapot"]
    assert "Teapot" in toy["non_retryable"]
    assert toy["schema_fault"]
    assert (toy["action"], toy["status"], toy["fault"]) == ("respond", 451, "Teapot")
    assert toy["scorer_known"] == toy["names"]
    assert toy["scorer_canonical"] == "Teapot"
    assert "Teapot" in toy["scorer_non_retryable"]
    assert toy["scorer_retryable"] is False


def test_registry_is_the_catalogue_and_the_scorer_lists() -> None:
    assert tuple(catalog.CATALOG.values()) == UNITS
    assert faultnames.KNOWN == catalog.FAULT_NAMES
    invisible = {u.name for u in UNITS if not u.visible}
    assert faultnames.INVISIBLE == invisible == {"HighLatency", "SlowInitialize"}
    assert {u.name for u in UNITS if not u.retryable} == faultnames.NON_RETRYABLE
    assert {u.name for u in UNITS if u.persistent_data} == faultnames.PERSISTENT_DATA


def test_every_unit_declares_what_the_engine_needs() -> None:
    ranks: dict[int, str] = {}
    for unit in UNITS:
        assert isinstance(unit, FaultUnit)
        assert unit.name and unit.summary, type(unit)
        assert issubclass(unit.params, Params), unit.name
        unit.params()  # every parameter has a default: a profile may name only the weight
        assert unit.stage in get_args(Stage) and unit.target in get_args(Target), unit.name
        if unit.incident:
            assert unit.stage == "episode", unit.name
        kind = type(unit)
        if kind.after is not FaultUnit.after or kind.transform is not FaultUnit.transform:
            # response effects apply in rank order: two units never share a rank
            assert unit.after_rank > 0 and unit.after_rank not in ranks, unit.name
            ranks[unit.after_rank] = unit.name
    # data first, then the body's shape, then the transport; model replies last
    assert [ranks[rank] for rank in sorted(ranks)] == [
        "StaleData",
        "ContradictoryData",
        "AdversarialPayload",
        "SchemaDrift",
        "EmptyResponse",
        "PartialResponse",
        "ConnectionReset",
        "LostReply",
        "StreamClosed",
        "ModelParameterCorruption",
        "EmptyChoice",
        "MalformedToolCall",
        "StreamCut",
    ]


def test_the_engine_names_no_fault() -> None:
    """Effects live in the units: engine.py has no fault name and no fault's params class."""
    source = (catalog.__file__.replace("catalog.py", "engine.py"), catalog.__file__)
    for path in source:
        text = Path(path).read_text(encoding="utf-8")
        named = [
            name for name in catalog.FAULT_NAMES if f'"{name}"' in text or f"{name}Params" in text
        ]
        assert named == [], (path, named)


def fault_rows(markdown: str) -> dict[str, dict[str, str]]:
    """Rows of every table whose first column is `fault`: name -> {column: cell}."""
    rows: dict[str, dict[str, str]] = {}
    header: list[str] | None = None
    for line in markdown.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif header[0] == "fault" and not set(cells[0]) <= {"-", ":"}:
            rows[cells[0]] = dict(zip(header, cells, strict=False))
    return rows


def test_the_fault_tables_of_the_docs_agree_with_the_registry() -> None:
    """docs/faults.md is written by hand: every unit has its row, with its stage, (where the
    table says) whether it is recoverable, and every parameter with its default."""
    docs = Path(__file__).resolve().parents[2] / "docs" / "faults.md"
    rows = fault_rows(docs.read_text(encoding="utf-8"))
    for unit in UNITS:
        assert unit.name in rows, f"docs/faults.md has no row for {unit.name}"
        row = rows[unit.name]
        assert row["stage"] == unit.stage, unit.name
        if "recoverable" in row:
            assert row["recoverable"].startswith("yes") == unit.recoverable, unit.name
        listed = row["parameters (defaults)"]
        missing = [name for name in unit.params.model_fields if f"`{name}:" not in listed]
        assert missing == [], (unit.name, missing)


def test_simpler_variants_are_valid_and_simpler() -> None:
    """Every unit's `simpler` proposals validate as its parameters and change something;
    a delay goes to 0 first, then to half."""
    cat = catalog
    proposing = 0
    for name, unit in cat.CATALOG.items():
        params = unit.params()
        variants = unit.simpler(params)
        proposing += bool(variants)
        for variant in variants:
            again = unit.params.model_validate(variant.model_dump())
            assert again != params, f"{name}: a variant that changes nothing"
    assert proposing >= 9
    timeout = cat.CATALOG["TransientTimeout"]
    delays = [v.model_dump()["delay_s"] for v in timeout.simpler(timeout.params())]
    assert delays == [0.0, 0.5]
    rate = cat.CATALOG["SoftRateLimit"]
    waits = rate.simpler(rate.params.model_validate({"retry_after_s": 8}))
    assert [v.model_dump()["retry_after_s"] for v in waits] == [0, 4, 7]
