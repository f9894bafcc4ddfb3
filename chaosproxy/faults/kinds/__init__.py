"""Every fault chaosproxy knows, one unit each: the registry.

A fault is a `FaultUnit` subclass in a module of this folder (its parameters, flags and
effects); it is registered by adding an instance to `UNITS`. The catalogue, the profile
schema and the scorer's lists derive from this tuple (docs/faults.md, "Adding a fault").
The order is the catalogue's: the order profiles, schemas and tables list the faults in.
"""

from __future__ import annotations

from chaosproxy.faults.kinds import (
    adversarial,
    body,
    contradictory,
    corruption,
    errors,
    incidents,
    mcp,
    model,
    model_params,
    schema_drift,
    stale,
    transport,
)
from chaosproxy.faults.unit import FaultUnit

UNITS: tuple[FaultUnit, ...] = (
    transport.TransientTimeout(),
    transport.LostReply(),
    transport.HighLatency(),
    transport.ConnectionReset(),
    errors.ServerError(),
    errors.SoftRateLimit(),
    errors.Unauthorized(),
    errors.HardRateLimit(),
    mcp.SessionExpired(),
    mcp.SlowInitialize(),
    mcp.StreamClosed(),
    mcp.ToolRemoved(),
    mcp.ToolChanged(),
    body.PartialResponse(),
    body.EmptyResponse(),
    schema_drift.SchemaDrift(),
    stale.StaleData(),
    contradictory.ContradictoryData(),
    corruption.ParameterCorruption(),
    adversarial.AdversarialPayload(),
    incidents.BlockingWindow(),
    incidents.CascadingFailure(),
    incidents.CombinedFailure(),
    model.ModelRateLimit(),
    model.ModelOverloaded(),
    model.ModelTimeout(),
    model.StreamCut(),
    model.EmptyChoice(),
    model.MalformedToolCall(),
    model_params.ModelParameterCorruption(),
)
