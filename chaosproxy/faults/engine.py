"""The fault engine: for each tool call, whether it fails and with which fault.

The engine draws and keeps incidents; what a fault *does* is its unit's business
(`chaosproxy/faults/kinds/`): the engine calls `unit.before` on the call and
`unit.after` on the reply, and names no fault itself.

Pure: the front-end describes a call, the engine answers a `Decision`; after a
forwarded call the front-end hands back the upstream reply and gets a
`ResponseEffect`. No sockets, clocks or files; the only state is a small record per
episode (call positions, incidents, replies kept for StaleData), guarded by a lock so
front-ends may call from several threads.

Every draw is `uniform(DrawKey(seed, episode key, "domain/tool", position, purpose))`.
A per-call fault's `draw` is its gate key (purpose "fault"); the pick among faults and
the fault's own choices use the same key with purposes "pick" and the fault's name.
Episode-level plans (FIT v2 incidents) use tool "*" and position 0.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from chaosproxy.faults import catalog as c
from chaosproxy.faults.draws import EPISODE_TOOL, between, uniform, uniform_of, weighted
from chaosproxy.faults.episode import (
    STALE_LIMIT,
    EpisodeState,
    Incident,
    args_key,
    upstream_arguments,
)
from chaosproxy.faults.models import (
    CallContext,
    Decision,
    DrawKey,
    FaultInfo,
    ResponseEffect,
)
from chaosproxy.faults.profile import Profile
from chaosproxy.faults.schedule import Schedule, ScheduledFault, ScheduleMode
from chaosproxy.faults.unit import CHAT_REPLY_TOOL, Applied, BeforeCall, Effect, Reply


class FaultEngine:
    """Decides faults for tool calls according to a profile, deterministically by seed."""

    def __init__(
        self,
        default_profile: Profile,
        seed: int = 0,
        hints: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self._profile = default_profile
        self.seed = seed
        self._hints: dict[str, dict[str, Any]] = dict(hints or {})
        self._inferred: dict[str, dict[str, Any]] = {}
        self._episodes: dict[str, EpisodeState] = {}
        self._lock = threading.RLock()
        self._mixes: dict[tuple[int, str], tuple[Profile, list[tuple[str, float]]]] = {}
        self._flags: dict[int, tuple[Profile, bool, bool, bool]] = {}
        """Per profile: (`_keys`, `_keeps_replies`, `_covers_all`), worked out once (asked
        on every call)."""
        self._merged_hints: dict[tuple[str, int], tuple[Profile, dict[str, Any]]] = {}
        self._rolling: dict[str, int] = {}

    # ---- configuration -----------------------------------------------------------

    @property
    def profile(self) -> Profile:
        return self._profile

    def set_profile(self, profile: Profile) -> None:
        """Hot-swap the default profile; episodes given their own profile keep it."""
        with self._lock:
            self._profile = profile

    def _mix(self, profile: Profile, target: str = "tool") -> list[tuple[str, float]]:
        """The profile's faults that apply to this kind of call (tool or model), weighted."""
        cached = self._mixes.get((id(profile), target))
        if cached is None or cached[0] is not profile:
            mix = [(n, w) for n, w in profile.mix().items() if c.CATALOG[n].target == target]
            cached = (profile, mix)
            self._mixes[(id(profile), target)] = cached
        return cached[1]

    def _profile_flags(self, profile: Profile) -> tuple[Profile, bool, bool, bool]:
        cached = self._flags.get(id(profile))
        if cached is None or cached[0] is not profile:
            cached = (profile, _keys(profile), _keeps_replies(profile), _covers_all(profile))
            self._flags[id(profile)] = cached
        return cached

    def _keys(self, profile: Profile) -> bool:
        """Whether calls under this profile may start a per-arguments incident (StaleData)."""
        return self._profile_flags(profile)[1]

    def _keeps_replies(self, profile: Profile) -> bool:
        """Whether replies must be remembered: only profiles that can replay one pay."""
        return self._profile_flags(profile)[2]

    def set_hints(self, domain: str, hints: dict[str, Any]) -> None:
        with self._lock:
            self._hints[domain] = hints
            self._merged_hints.clear()

    def add_inferred_hints(self, domain: str, hints: dict[str, Any]) -> None:
        """Hints guessed by the proxy (e.g. critical arguments from an OpenAPI schema): the
        weakest layer, under the profile's and the service's own."""
        with self._lock:
            self._inferred[domain] = {**self._inferred.get(domain, {}), **hints}
            self._merged_hints.clear()

    def configure_episode(
        self,
        episode: str,
        profile: Profile | None = None,
        seed: int | None = None,
        key: str | None = None,
        plan_length: int | None = None,
        schedule: Schedule | None = None,
        schedule_mode: ScheduleMode = "replace",
    ) -> None:
        """Start (or restart) an episode with its own profile, seed and key.

        `plan_length`: the task's l_min, so an incident plan can time its incident within
        the plan (None, or below 1: unknown, the plan's fixed steps apply). `schedule`: an
        explicit plan of faults, in place of the profile's draws (`schedule_mode`
        "replace") or on top of them ("overlay")."""
        with self._lock:
            state = EpisodeState(
                episode=episode,
                key=key if key is not None else episode,
                seed=self.seed if seed is None else seed,
                profile=profile,
                plan_length=plan_length if plan_length is not None and plan_length >= 1 else None,
                schedule=schedule,
                schedule_mode=schedule_mode,
            )
            if schedule is not None:
                self._schedule_incidents(state, profile or self._profile, schedule)
            self._episodes[episode] = state

    def _schedule_incidents(self, state: EpisodeState, profile: Profile, plan: Schedule) -> None:
        """The schedule's step-based entries, as incidents planned from the start."""
        for index, entry in enumerate(plan.steps()):
            assert entry.from_step is not None  # steps() holds step entries only
            settings = entry.settings(profile.params.of(entry.fault))
            params = settings.model_dump()
            params.update(entry.logged)
            state.incidents.append(
                Incident(
                    # as an incident plan names and salts its incident, so a replayed plan
                    # logs the same; later step entries get their own
                    id=f"{entry.fault}@episode" + (f"#{index + 1}" if index else ""),
                    fault=entry.fault,
                    start_step=entry.from_step,
                    end_step=entry.to_step,
                    tool=None if entry.tool == "*" else entry.tool,
                    draw=None,
                    salt=uniform_of(
                        state.seed,
                        state.key,
                        EPISODE_TOOL,
                        0,
                        "incident.salt" + (f".{index + 1}" if index else ""),
                    ),
                    settings=settings,
                    params=params,
                    origin="plan",
                )
            )

    def roll_episode(self, episode: str, calls: int) -> None:
        """Cut the calls of `episode` into rolling episodes of `calls` tool calls (0: never).

        For the id that calls without an episode id share: without it, everything an agent
        sends to `chaosproxy up` is one endless episode, and a persistent fault (a drift,
        stale data) drawn once stays for good. Tool call `step` (the proxy's count) falls in
        rolling episode `(step - 1) // calls`; each gets a fresh record (incidents,
        positions, replies) and its own key, `episode` for the first and `episode~k` for
        the k-th, and sees steps 1..calls. An episode configured with `configure_episode`
        does not roll."""
        with self._lock:
            if calls > 0:
                self._rolling[episode] = calls
            else:
                self._rolling.pop(episode, None)
            state = self._episodes.get(episode)
            if state is not None and state.rolling_calls:
                state.rolling_calls = max(calls, 0)

    def forget_episode(self, episode: str) -> None:
        with self._lock:
            self._episodes.pop(episode, None)

    # ---- the decision ------------------------------------------------------------

    def before_call(self, ctx: CallContext) -> Decision:
        with self._lock:
            state = self._state(ctx.episode)
            if state.rolling_calls:
                state, ctx = self._rolled(state, ctx)
            profile = state.profile or self._profile
            if _idle(profile, state):
                return self._forward(state, profile, ctx)
            decision = self._before(ctx, state, profile)
            if decision.action == "forward" and (decision.planned or decision.in_scope):
                decision.wants_reply = bool(decision.planned) or self._keeps(state)
                if decision.wants_reply and not decision.planned:
                    decision.kept_already = _kept_already(state, ctx, decision)
            return decision

    def _keeps(self, state: EpisodeState) -> bool:
        """`_keeps_replies` for an episode: its profile's draws, or its schedule's faults."""
        if state.schedule is None:  # the usual case, asked twice per call: one lookup
            profile = state.profile or self._profile
            cached = self._flags.get(id(profile))
            if cached is not None and cached[0] is profile:
                return cached[2]
            return self._profile_flags(profile)[2]
        drawn = state.schedule_mode == "overlay"
        if drawn and self._keeps_replies(state.profile or self._profile):
            return True
        return state.schedule is not None and any(
            entry.fault in c.REPLAY_FAULTS for entry in state.schedule.faults
        )

    def _draws(self, state: EpisodeState) -> bool:
        """Whether the profile's draws apply (no schedule, or one laid over them)."""
        return state.schedule is None or state.schedule_mode == "overlay"

    def _rolled(self, state: EpisodeState, ctx: CallContext) -> tuple[EpisodeState, CallContext]:
        """The rolling episode this call falls in (a new record when it starts one), and
        the call with its step counted within it."""
        calls = state.rolling_calls
        window = (ctx.step - 1) // calls
        if window != state.window:
            key = ctx.episode if window == 0 else f"{ctx.episode}~{window + 1}"
            state = EpisodeState(
                episode=ctx.episode, key=key, seed=self.seed, rolling_calls=calls, window=window
            )
            self._episodes[ctx.episode] = state
        if window == 0:  # the first window: the call's step is already right
            return state, ctx
        rolled = CallContext(
            ctx.episode,
            ctx.step - window * calls,
            ctx.domain,
            ctx.tool,
            ctx.transport,
            ctx.arguments,
            ctx.target,
            ctx.mcp_session,
            ctx.stream,
        )  # built field by field: `dataclasses.replace` costs several times as much
        return state, rolled

    def _forward(self, state: EpisodeState, profile: Profile, ctx: CallContext) -> Decision:
        """`_before` for a call nothing can fault (see `_idle`): the same position counted,
        the same forward decision, without the walk over incidents, hints and draws."""
        position = state.next_position(f"{ctx.domain}/{ctx.tool}", ctx.step)
        in_scope = profile.scope.covers(ctx.episode, state.key, ctx.domain, ctx.tool)
        return _plain(ctx, state, profile, position, ctx.arguments, in_scope=in_scope)

    def _before(
        self, ctx: CallContext, state: EpisodeState | None = None, profile: Profile | None = None
    ) -> Decision:
        """The full walk. `state` and `profile`: the episode's record and profile when the
        caller already looked them up (`before_call`), else looked up here."""
        if state is None:
            state = self._state(ctx.episode)
        if profile is None:
            profile = state.profile or self._profile
        tool_id = f"{ctx.domain}/{ctx.tool}"
        position = state.next_position(tool_id, ctx.step)
        arguments = dict(ctx.arguments)
        scheduled = (
            state.schedule.at_call(ctx.domain, ctx.tool, position)
            if state.schedule is not None
            else None
        )
        _, keys, _, covers_all = self._profile_flags(profile)
        in_scope = covers_all or profile.scope.covers(ctx.episode, state.key, ctx.domain, ctx.tool)
        if not in_scope and scheduled is None and not (state.schedule and state.incidents):
            return _plain(ctx, state, profile, position, arguments, in_scope=False)
        model = ctx.target == "model"
        draws = state.schedule is None or state.schedule_mode == "overlay"
        if not model and draws and profile.incidents is not None:
            self._plan(state, profile)
        renames: dict[str, str] = {}
        if ctx.transport == "mcp" and state.argument_renames.get(tool_id):
            arguments, renames = upstream_arguments(arguments, state.argument_renames[tool_id])
        keyed = (draws and keys) or state.keyed_incidents
        if state.schedule is not None and any(
            entry.fault in c.PER_ARGUMENTS_FAULTS for entry in state.schedule.faults
        ):
            keyed = True
        call_key = args_key(arguments) if keyed else ""
        hints = self._model_hints(profile) if model else self._domain_hints(ctx.domain, profile)

        applied: list[Applied] = []
        for incident in () if model else state.incidents:
            if incident.covers(ctx.step, tool_id, call_key):
                result = self._incident_effect(
                    incident, state, profile, ctx, tool_id, position, arguments, hints
                )
                if result is not None:
                    incident.touched += 1
                    applied.append(result)
                    if result.terminal:
                        break
        else:
            fresh: Applied | None = None
            if scheduled is not None:
                fresh = self._scheduled(
                    scheduled, state, profile, ctx, tool_id, position, arguments, call_key, hints
                )
            elif draws and in_scope:
                fresh = self._fresh(
                    state, profile, ctx, tool_id, position, arguments, call_key, hints
                )
            if fresh is not None:
                applied.insert(0, fresh)
        if not applied:  # most calls: no fault, and no dict of the decision's fields
            return _plain(
                ctx,
                state,
                profile,
                position,
                arguments,
                renames=renames,
                arguments_key=call_key if keyed else None,
            )
        primary = next((item for item in applied if item.terminal), applied[0])
        base: dict[str, Any] = {
            "episode": ctx.episode,
            "episode_key": state.key,
            "seed": state.seed,
            "profile": profile.name,
            "step": ctx.step,
            "domain": ctx.domain,
            "tool": ctx.tool,
            "transport": ctx.transport,
            "position": position,
            "argument_renames": renames,
            "arguments_key": call_key if keyed else None,
        }
        return self._finish(state, arguments, applied, primary, base, ctx)

    def _finish(
        self,
        state: EpisodeState,
        arguments: dict[str, Any],
        applied: list[Applied],
        primary: Applied | None,
        base: dict[str, Any],
        ctx: CallContext,
    ) -> Decision:
        if primary is None:
            return _decision(action="forward", arguments=arguments, **base)
        info = primary.info
        if len(applied) > 1:
            others = [item for item in applied if item is not primary]
            info.also = [item.info.incident or item.info.name for item in others]
        else:
            info.also = []
        state.faults.append(
            {
                "step": ctx.step if ctx.target == "tool" else None,
                "tool": ctx.tool,
                "fault": info.name,
                "fresh": info.fresh,
                "incident": info.incident,
            }
        )
        if primary.terminal:
            return _decision(
                action=primary.action,
                arguments=arguments,
                delay_s=float(primary.delay_s),
                fault=info,
                response=primary.response,
                **base,
            )
        for item in applied:
            if item.arguments is not None:
                arguments = item.arguments
                base = {**base, "arguments_key": None}  # keyed before the unit changed them
        planned = [effect for item in applied for effect in item.planned]
        if len(planned) > 1:
            planned.sort(key=lambda effect: c.CATALOG[effect.name].after_rank)
        return _decision(
            action="forward",
            arguments=arguments,
            delay_s=float(sum(item.delay_s for item in applied)),
            fault=info,
            planned=planned,
            **base,
        )

    # ---- fresh per-call draws ----------------------------------------------------

    def _fresh(
        self,
        state: EpisodeState,
        profile: Profile,
        ctx: CallContext,
        tool_id: str,
        position: int,
        arguments: dict[str, Any],
        call_key: str,
        hints: dict[str, Any],
    ) -> Applied | None:
        if profile.failure_rate <= 0:
            return None
        if profile.scope.steps is not None and not profile.scope.steps.contains(ctx.step):
            return None
        mix = self._mix(profile, ctx.target)
        if not mix:
            return None
        if uniform_of(state.seed, state.key, tool_id, position, "fault") >= profile.failure_rate:
            return None
        gate = DrawKey(
            seed=state.seed, episode_key=state.key, tool=tool_id, position=position, purpose="fault"
        )
        name = weighted(uniform_of(state.seed, state.key, tool_id, position, "pick"), mix)
        repicked_from: str | None = None
        paid: str | None = None
        excluded = {inc.fault for inc in state.incidents if inc.covers(ctx.step, tool_id, call_key)}
        excluded |= _cannot_land(ctx)
        if not state.has_tool_reply(tool_id):
            # A replaying fault (StaleData) serves an earlier reply of this tool; with none
            # kept it could not reach the agent: it is re-picked here (the rate holds) and
            # owed, paid at the episode's next fresh draw where it can land (the mix holds).
            for replay in c.REPLAY_FAULTS & {name} - excluded:
                state.owed[replay] = state.owed.get(replay, 0) + 1
            excluded.update(c.REPLAY_FAULTS)
        else:
            owed = sorted(f for f, n in state.owed.items() if n > 0 and f not in excluded)
            if owed and name not in owed:
                state.owed[owed[0]] -= 1
                paid, name = name, owed[0]
        salt = uniform_of(state.seed, state.key, tool_id, position, name)
        while name in excluded or not self._reaches(name, profile, salt, ctx, arguments, hints):
            # The call is already inside this incident (drift stays one version change), or
            # the fault cannot be delivered on it (nothing it could act on, say): draw again
            # among the other faults, so the call still fails at the profile's rate.
            excluded.add(name)
            others = [(fault, weight) for fault, weight in mix if fault not in excluded]
            if not others:
                return None
            repicked_from = repicked_from or name
            name = weighted(uniform_of(state.seed, state.key, tool_id, position, "repick"), others)
            salt = uniform_of(state.seed, state.key, tool_id, position, name)
        params = profile.params.of(name)
        incident: Incident | None = None
        if name in c.INCIDENT_FAULTS:
            incident = self._start_incident(state, name, params, ctx, tool_id, call_key, gate, salt)
            incident.touched += 1
        info = FaultInfo(
            name=name,
            stage=c.CATALOG[name].stage,
            recoverable=c.CATALOG[name].recoverable,
            params=params.model_dump(),
            draw=gate,
            incident=incident.id if incident else None,
            fresh=True,
        )
        if repicked_from is not None:
            info.params["repicked_from"] = repicked_from
        if paid is not None:
            # this draw picked `paid`; it serves an earlier pick of `name` that could not land
            info.params["owed_instead_of"] = paid
        call = BeforeCall(
            params=params,
            salt=salt,
            call_salt=salt,
            info=info,
            ctx=ctx,
            arguments=arguments,
            hints=hints,
            incident_id=incident.id if incident else None,
            position=position,
        )
        return c.CATALOG[name].before(call)

    def _scheduled(
        self,
        entry: ScheduledFault,
        state: EpisodeState,
        profile: Profile,
        ctx: CallContext,
        tool_id: str,
        position: int,
        arguments: dict[str, Any],
        call_key: str,
        hints: dict[str, Any],
    ) -> Applied | None:
        """A fault the schedule puts on this call: no draw, no re-pick. One that cannot
        land here (an MCP-only fault on a REST call, nothing it can act on) is kept in
        `schedule_missed` with the reason, not silently dropped."""
        name = entry.fault
        unit = c.CATALOG[name]
        params = entry.settings(profile.params.of(name))
        salt = uniform_of(state.seed, state.key, tool_id, position, name)
        why: str | None = None
        if unit.target != ctx.target:
            why = f"{name} is a {unit.target} fault; this is a {ctx.target} call"
        elif unit.needs == "mcp_initialize":
            why = f"{name} lands on an MCP initialize: schedule it on {ctx.domain}/initialize"
        elif name in _cannot_land(ctx):
            why = f"{name} cannot land on a {ctx.transport} call"
        elif unit.needs_arguments and not unit.acts_on(params, salt, ctx.tool, arguments, hints):
            why = f"{name} finds nothing to act on in this call's arguments"
        elif name in c.REPLAY_FAULTS and not state.has_tool_reply(tool_id):
            why = f"{name} needs an earlier reply of {tool_id}; there is none yet"
        if why is not None:
            state.schedule_missed.append(
                {"tool": tool_id, "call": position, "step": ctx.step, "fault": name, "why": why}
            )
            return None
        incident: Incident | None = None
        if name in c.INCIDENT_FAULTS:
            span = unit.span(params, salt)
            incident = Incident(
                id=f"{name}@{tool_id}#{position}",
                fault=name,
                start_step=ctx.step,
                end_step=None if span is None else ctx.step + span - 1,
                tool=None if unit.episode_wide(params) else tool_id,
                draw=None,
                salt=salt,
                settings=params,
                params=params.model_dump(),
                args_key=call_key if unit.per_arguments else None,
            )
            state.incidents.append(incident)
            incident.touched += 1
        info = FaultInfo(
            name=name,
            stage=unit.stage,
            recoverable=unit.recoverable,
            params={**params.model_dump(), **entry.logged},
            draw=None,
            incident=incident.id if incident else None,
            fresh=True,
        )
        call = BeforeCall(
            params=params,
            salt=salt,
            call_salt=salt,
            info=info,
            ctx=ctx,
            arguments=arguments,
            hints=hints,
            incident_id=incident.id if incident else None,
            position=position,
        )
        return unit.before(call)

    @staticmethod
    def _reaches(
        name: str,
        profile: Profile,
        salt: float,
        ctx: CallContext,
        arguments: dict[str, Any],
        hints: dict[str, Any],
    ) -> bool:
        """Whether the fault's unit finds something to act on in this call's arguments.
        `salt`: the call's draw for `name`, worked out once by the caller, which uses it."""
        unit = c.CATALOG[name]
        if not unit.needs_arguments:
            return True
        return unit.acts_on(profile.params.of(name), salt, ctx.tool, arguments, hints)

    def _start_incident(
        self,
        state: EpisodeState,
        name: str,
        params: c.Params,
        ctx: CallContext,
        tool_id: str,
        call_key: str,
        draw: DrawKey,
        salt: float,
    ) -> Incident:
        unit = c.CATALOG[name]
        span = unit.span(params, salt)
        incident = Incident(
            id=f"{name}@{tool_id}#{draw.position}",
            fault=name,
            start_step=ctx.step,
            end_step=None if span is None else ctx.step + span - 1,
            tool=None if unit.episode_wide(params) else tool_id,
            draw=draw,
            salt=salt,
            settings=params,
            params=params.model_dump(),
            args_key=call_key if unit.per_arguments else None,
        )
        state.incidents.append(incident)
        return incident

    # ---- episode-level plans (FIT v2) --------------------------------------------

    def _plan(self, state: EpisodeState, profile: Profile) -> None:
        if profile.incidents is None or state.planned_for == profile.name:
            return
        state.planned_for = profile.name
        plan = profile.incidents

        def draw(purpose: str) -> DrawKey:
            return DrawKey(
                seed=state.seed,
                episode_key=state.key,
                tool=EPISODE_TOOL,
                position=0,
                purpose=f"incident.{purpose}",
            )

        kind_name = weighted(uniform(draw("kind")), [(k, v.weight) for k, v in plan.kinds.items()])
        kind = plan.kinds[kind_name]
        chosen = weighted(uniform(draw("fault")), [(f, f.weight) for f in kind.faults])
        bucket = weighted(uniform(draw("timing")), [(b, b.weight) for b in plan.timing])
        low, high, basis = bucket.steps.from_step, bucket.steps.to_step, "steps"
        if bucket.plan is not None and state.plan_length is not None:
            # early/mid/late of this task's plan, so the incident falls within the calls
            # the task needs; fixed steps would miss most short tasks
            (low, high), basis = bucket.plan.steps(state.plan_length), "plan"
        start = between(uniform(draw("start")), low, high)
        end: int | None = None
        length: int | None = None
        if chosen.duration != "persistent":
            length = between(
                uniform(draw("duration")), chosen.duration.from_step, chosen.duration.to_step
            )
            end = start + length - 1
        params = profile.params.of(chosen.fault).model_dump()
        params.update(
            kind=kind_name,
            label=chosen.label,
            timing=bucket.name,
            timing_basis=basis,
            timing_steps=[low, high],
            plan_length=state.plan_length,
            duration_steps=length if length is not None else "persistent",
        )
        state.incidents.append(
            Incident(
                id=f"{chosen.fault}@episode",
                fault=chosen.fault,
                start_step=start,
                end_step=end,
                tool=None,
                draw=draw("kind"),
                salt=uniform(draw("salt")),
                settings=profile.params.of(chosen.fault),
                params=params,
                origin="plan",
            )
        )

    # ---- applying incidents ------------------------------------------------------

    def _incident_effect(
        self,
        incident: Incident,
        state: EpisodeState,
        profile: Profile,
        ctx: CallContext,
        tool_id: str,
        position: int,
        arguments: dict[str, Any],
        hints: dict[str, Any],
    ) -> Applied | None:
        name = incident.fault
        if name in _cannot_land(ctx):
            return None  # e.g. a planned StreamClosed meets a REST call
        params = incident.settings
        unit = c.CATALOG[name]
        if unit.needs_arguments and not unit.acts_on(
            params, incident.salt, ctx.tool, arguments, hints
        ):
            return None  # e.g. a planned ParameterCorruption meets a call with no argument
        call_salt = uniform_of(state.seed, state.key, tool_id, position, f"{name}.call")
        fresh = incident.origin == "plan" and incident.touched == 0
        info = FaultInfo(
            name=name,
            stage=c.CATALOG[name].stage,
            recoverable=c.CATALOG[name].recoverable,
            params=dict(incident.params),
            draw=incident.draw,
            incident=incident.id,
            fresh=fresh,
        )
        call = BeforeCall(
            params=params,
            salt=incident.salt,
            call_salt=call_salt,
            info=info,
            ctx=ctx,
            arguments=arguments,
            hints=hints,
            incident_id=incident.id,
            offset=ctx.step - incident.start_step,
            from_incident=True,
            # 0 on the window's first call: a BlockingWindow/CombinedFailure failure always
            # lands there, so an incident reaches the agent once (HB-Eval: one per episode)
            touched=incident.touched,
        )
        return c.CATALOG[name].before(call)

    # ---- after the upstream answered ---------------------------------------------

    def after_call(self, decision: Decision, status: int, body: Any) -> ResponseEffect:
        """The effect on the reply. A unit with `logs_effect` also completes the decision's
        fault with what it did (`params.effect`), which the proxy logs with the call."""
        with self._lock:
            return self._after(decision, status, body)

    def _after(self, decision: Decision, status: int, body: Any) -> ResponseEffect:
        if decision.action != "forward":
            return ResponseEffect(action="pass", status=status, body=body)
        state = self._episodes.get(decision.episode)
        if state is not None and state.key != decision.episode_key:
            state = None  # the episode rolled (or restarted) while this call was out
        planned = decision.planned
        earlier: Any = None
        basis: str | None = None
        key = ""
        keeping = (
            state is not None and 200 <= status < 300 and body is not None and self._keeps(state)
        )
        tool_id = f"{decision.domain}/{decision.tool}" if keeping or planned else ""
        if state is not None and keeping:
            known = decision.arguments_key
            key = args_key(decision.arguments) if known is None else known
            if planned and any(effect.name in c.REPLAY_FAULTS for effect in planned):
                # only a replaying effect (StaleData) reads it: no copy on other calls
                earlier, basis = state.earlier(tool_id, key)
        if not planned:
            if state is not None and keeping:
                state.remember(tool_id, key, body)
            return ResponseEffect(action="pass", status=status, body=body)
        effect = self._effects(decision, status, body, earlier, basis)
        if state is not None and keeping:
            # a stale cache goes on serving what it served (the tool's reply to other
            # arguments), not this call's fresh reply the agent never saw
            stale = earlier is not None and any(name in c.REPLAY_FAULTS for name in effect.notes)
            state.remember(tool_id, key, earlier if stale else body)
        return effect

    def _effects(
        self, decision: Decision, status: int, body: Any, earlier: Any, basis: str | None
    ) -> ResponseEffect:
        """The planned response effects, in rank order, on an upstream reply."""
        primary = decision.fault.name if decision.fault else None
        delivered: dict[str, bool] = {}
        notes: dict[str, Any] = {}
        current = body
        truncated: Effect | None = None
        for planned in decision.planned:
            reply = Reply(
                planned,
                status,
                body=current,
                original=body,
                earlier=earlier,
                earlier_basis=basis,
            )
            result = c.CATALOG[planned.name].after(reply)
            if isinstance(result, ResponseEffect):
                return result
            delivered[planned.name] = result is not None
            if result is None:
                continue
            notes[planned.name] = result.info
            logs = planned.name == primary and c.CATALOG[planned.name].logs_effect
            if logs and decision.fault is not None:
                decision.fault.params["effect"] = result.info
            current = result.body
            if result.truncated_text is not None:
                truncated = result
        is_delivered = delivered.get(primary, True) if primary else True
        reason = None
        if primary is not None and not is_delivered:
            reason = c.CATALOG[primary].not_applied(status, body)
        if truncated is not None:
            return ResponseEffect(
                action="truncate",
                status=status,
                body=current,
                truncate_at=truncated.truncate_at,
                truncated_text=truncated.truncated_text,
                delivered=is_delivered,
                notes=notes,
                reason=reason,
            )
        if not notes:
            return ResponseEffect(
                action="pass", status=status, body=body, delivered=is_delivered, reason=reason
            )
        return ResponseEffect(
            action="replace",
            status=status,
            body=current,
            delivered=is_delivered,
            notes=notes,
            reason=reason,
        )

    # ---- MCP tools/list ----------------------------------------------------------

    def rewrite_tool_list(
        self, episode: str, domain: str, tools: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The tools/list an episode sees: each tool as the incidents covering it show it
        (SchemaDrift: its v2 form; ToolChanged: new argument names), in the order they
        began; a tool an incident hides (ToolRemoved) is left out."""
        with self._lock:
            state = self._episodes.get(episode)
            if state is None:
                return tools
            out = []
            step = max(state.last_step, 1)
            for tool in tools:
                tool_id = f"{domain}/{tool.get('name')}"
                shown: dict[str, Any] | None = tool
                renames: dict[str, str] = {}
                for incident in state.incidents:
                    if shown is None or not incident.covers(step, tool_id):
                        continue
                    unit = c.CATALOG[incident.fault]
                    if unit.hides_tool:
                        shown = None
                        continue
                    rewritten = unit.rewrite_tool(incident, shown)
                    if rewritten is not None:
                        shown, more = rewritten
                        renames.update(more)
                if shown is None:
                    continue
                if renames:
                    state.argument_renames[tool_id] = renames
                out.append(shown)
            return out

    def tool_list_marks(self, episode: str, domain: str) -> frozenset[str]:
        """The announced incidents shaping the domain's tools/list now: when this set
        changes, a server would send `notifications/tools/list_changed` (the MCP front-end
        compares it with what each session last saw)."""
        with self._lock:
            state = self._episodes.get(episode)
            if state is None or not state.incidents:
                return frozenset()
            step = max(state.last_step, 1)
            return frozenset(
                incident.id
                for incident in state.incidents
                if (incident.tool is None or incident.tool.startswith(f"{domain}/"))
                and incident.start_step <= step
                and (incident.end_step is None or step <= incident.end_step)
                and c.CATALOG[incident.fault].announced(incident)
            )

    def initialize(self, episode: str, domain: str) -> tuple[FaultInfo, float] | None:
        """`before_initialize` with the hold its fault asks for (seconds): what an MCP
        front-end needs, without reading the fault's parameters itself."""
        fault = self.before_initialize(episode, domain)
        if fault is None:
            return None
        return fault, c.CATALOG[fault.name].hold_s(fault.params)

    def before_initialize(self, episode: str, domain: str) -> FaultInfo | None:
        """An MCP `initialize`: a third kind of call beside tool and model calls, drawn
        like one (the profile's rate, then the pick) under its own key (`domain/initialize`,
        the n-th initialize), among the faults that land on an initialize (SlowInitialize)
        only, as a model call's fault is drawn among model faults: so a profile's
        connection-stage faults meet the agent at its rate per connection opened, not at
        their weight's small share of it. The hold is `params["delay_s"]`. Steps do not
        move."""
        with self._lock:
            state = self._state(episode)
            profile = state.profile or self._profile
            tool_id = f"{domain}/initialize"
            if state.schedule is not None:
                # a schedule names initializes by position: every one counts
                state.initializes += 1
                entry = state.schedule.at_call(domain, "initialize", state.initializes)
                if entry is not None:
                    return self._scheduled_initialize(state, profile, entry, tool_id)
            if (
                not self._draws(state)
                or profile.failure_rate <= 0
                or not profile.scope.covers(episode, state.key, domain, "initialize")
            ):
                return None
            if state.schedule is None:
                state.initializes += 1
            position = state.initializes
            mix = [(n, w) for n, w in self._mix(profile) if n in c.CONNECTION_FAULTS]
            if not mix or (
                uniform_of(state.seed, state.key, tool_id, position, "fault")
                >= profile.failure_rate
            ):
                return None
            name = weighted(uniform_of(state.seed, state.key, tool_id, position, "pick"), mix)
            params = profile.params.of(name)
            state.faults.append(
                {"step": state.last_step, "tool": "initialize", "fault": name, "fresh": True}
            )
            return FaultInfo(
                name=name,
                stage=c.CATALOG[name].stage,
                recoverable=c.CATALOG[name].recoverable,
                params=params.model_dump(),
                draw=DrawKey(
                    seed=state.seed,
                    episode_key=state.key,
                    tool=tool_id,
                    position=position,
                    purpose="fault",
                ),
            )

    def _scheduled_initialize(
        self, state: EpisodeState, profile: Profile, entry: ScheduledFault, tool_id: str
    ) -> FaultInfo | None:
        """The fault a schedule puts on this `initialize` (`domain/initialize`, call n):
        only a connection fault (SlowInitialize) can land there; any other is kept in
        `schedule_missed` with the reason."""
        name = entry.fault
        if name not in c.CONNECTION_FAULTS:
            state.schedule_missed.append(
                {
                    "tool": tool_id,
                    "call": entry.call,
                    "step": state.last_step,
                    "fault": name,
                    "why": f"{name} cannot land on an MCP initialize",
                }
            )
            return None
        params = entry.settings(profile.params.of(name))
        state.faults.append(
            {"step": state.last_step, "tool": "initialize", "fault": name, "fresh": True}
        )
        return FaultInfo(
            name=name,
            stage=c.CATALOG[name].stage,
            recoverable=c.CATALOG[name].recoverable,
            params={**params.model_dump(), **entry.logged},
            draw=None,
            fresh=True,
        )

    # ---- reporting ---------------------------------------------------------------

    def episode_summary(self, episode: str) -> dict[str, Any]:
        with self._lock:
            state = self._episodes.get(episode)
            if state is None:
                return {"episode": episode, "known": False}
            summary: dict[str, Any] = {
                "episode": episode,
                "known": True,
                "episode_key": state.key,
                "seed": state.seed,
                "profile": (state.profile or self._profile).name,
                "calls": state.calls,
                "last_step": state.last_step,
                "positions": dict(state.positions),
                "faults": list(state.faults),
                "incidents": [incident.summary() for incident in state.incidents],
            }
            if state.schedule is not None:
                # only with a schedule: summaries of drawn episodes stay as they were
                summary["schedule_mode"] = state.schedule_mode
                summary["schedule_missed"] = list(state.schedule_missed)
            return summary

    # ---- helpers -----------------------------------------------------------------

    def _state(self, episode: str) -> EpisodeState:
        state = self._episodes.get(episode)
        if state is None:
            state = EpisodeState(
                episode=episode,
                key=episode,
                seed=self.seed,
                rolling_calls=self._rolling.get(episode, 0),
            )
            self._episodes[episode] = state
        return state

    def _model_hints(self, profile: Profile) -> dict[str, Any]:
        """A model's reply may call any domain's tools: every domain's critical arguments,
        per tool name (what a model fault rewriting a tool call acts on). Cached beside the
        domains' under `*`, which is no domain's name."""
        cached = self._merged_hints.get(("*", id(profile)))
        if cached is not None and cached[0] is profile:
            return cached[1]
        critical: dict[str, dict[str, Any]] = {}
        for domain in sorted({*self._inferred, *profile.hints, *self._hints}):
            hints = self._domain_hints(domain, profile)
            for tool, args in (hints.get("critical_args") or {}).items():
                critical[tool] = {**critical.get(tool, {}), **args}
        merged = {"critical_args": critical} if critical else {}
        self._merged_hints[("*", id(profile))] = (profile, merged)
        return merged

    def _domain_hints(self, domain: str, profile: Profile) -> dict[str, Any]:
        """Layers, each winning over the one before: what the proxy inferred, the profile's,
        the service's own (critical arguments merged per tool)."""
        cached = self._merged_hints.get((domain, id(profile)))
        if cached is not None and cached[0] is profile:
            return cached[1]
        layers = (
            self._inferred.get(domain, {}),
            profile.hints.get(domain, {}),
            self._hints.get(domain, {}),
        )
        merged: dict[str, Any] = {}
        critical: dict[str, dict[str, Any]] = {}
        for layer in layers:
            merged.update(layer)
            for tool, args in (layer.get("critical_args") or {}).items():
                critical[tool] = {**critical.get(tool, {}), **args}
        if critical:
            merged["critical_args"] = critical
        self._merged_hints[(domain, id(profile))] = (profile, merged)
        return merged


def _idle(profile: Profile, state: EpisodeState) -> bool:
    """Whether no call of this episode can be faulted now (e.g. `lambda0.0`): no per-call
    rate, no incident plan, no incident running, no drifted argument names to map back, no
    schedule."""
    return (
        state.schedule is None
        and profile.failure_rate <= 0
        and profile.incidents is None
        and not state.incidents
        and not state.argument_renames
    )


def _kept_already(state: EpisodeState, ctx: CallContext, decision: Decision) -> bool:
    """Whether `after_call` would keep nothing of this reply: a REST tool call with no
    planned effect whose reply to these arguments and the tool's first reply are both kept
    (`remember` keeps only firsts). Its reply then goes through unread, as at λ0; the same
    replies are kept, the same bytes reach the agent. REST only: the other adapters note
    an unparsable reply in the log when they read it."""
    key = decision.arguments_key
    if key is None or ctx.transport != "rest" or ctx.target != "tool":
        return False
    tool_id = f"{ctx.domain}/{ctx.tool}"
    return tool_id in state.tool_replies and (
        (tool_id, key) in state.stale or len(state.stale) >= STALE_LIMIT
    )


def _cannot_land(ctx: CallContext) -> frozenset[str]:
    """Faults that cannot reach the agent on this call (an MCP-native one off MCP, a
    whole-reply model fault on a streamed or non-chat model call)."""
    allowed: tuple[str, ...]
    if ctx.target == "model":
        whole_chat = ctx.tool == CHAT_REPLY_TOOL and not ctx.stream
        allowed = ("call", "chat_reply") if whole_chat else ("call",)
    elif ctx.transport != "mcp":
        allowed = ("call",)
    else:
        allowed = ("call", "mcp", "mcp_session") if ctx.mcp_session else ("call", "mcp")
    return _needing_other_than(allowed)


@functools.lru_cache(maxsize=16)
def _needing_other_than(allowed: tuple[str, ...]) -> frozenset[str]:
    """The catalog's faults whose `needs` is none of `allowed` (four combinations exist:
    worked out once each, not on every fresh draw)."""
    return frozenset(name for name, unit in c.CATALOG.items() if unit.needs not in allowed)


def _plain(
    ctx: CallContext,
    state: EpisodeState,
    profile: Profile,
    position: int,
    arguments: dict[str, Any],
    *,
    in_scope: bool = True,
    renames: dict[str, str] | None = None,
    arguments_key: str | None = None,
) -> Decision:
    """`_decision` of a call no fault touches, built field by field (most calls: the
    keyword dict `_decision` unpacks costs several times as much)."""
    return Decision(
        action="forward",
        arguments=dict(arguments),
        argument_renames={} if renames is None else dict(renames),
        episode=ctx.episode,
        episode_key=state.key,
        seed=state.seed,
        profile=profile.name,
        step=ctx.step,
        domain=ctx.domain,
        tool=ctx.tool,
        transport=ctx.transport,
        position=position,
        in_scope=in_scope,
        arguments_key=arguments_key,
    )


def _decision(
    arguments: dict[str, Any], argument_renames: dict[str, str] | None = None, **fields: Any
) -> Decision:
    """A decision owning its own `arguments` and `argument_renames` (the dicts the units
    and the episode record hold are never shared with the proxy)."""
    return Decision(
        arguments=dict(arguments),
        argument_renames={} if argument_renames is None else dict(argument_renames),
        **fields,
    )


def _covers_all(profile: Profile) -> bool:
    """Whether the profile's scope covers every call (no domain, tool or episode named):
    `Scope.covers` is then True without its pattern matching."""
    scope = profile.scope
    return (
        scope.domains is None
        and scope.tools is None
        and not scope.exclude_tools
        and scope.episodes is None
    )


def _keys(profile: Profile) -> bool:
    """Whether calls under `profile` may start a per-arguments incident (StaleData)."""
    return profile.failure_rate > 0 and any(
        profile.weights.get(name, 0) > 0 for name in c.PER_ARGUMENTS_FAULTS
    )


def _keeps_replies(profile: Profile) -> bool:
    """Whether replies must be remembered: only profiles that can replay one pay."""
    if profile.failure_rate > 0 and any(
        profile.weights.get(name, 0) > 0 for name in c.REPLAY_FAULTS
    ):
        return True
    plan = profile.incidents
    return plan is not None and any(
        fault.fault in c.REPLAY_FAULTS for kind in plan.kinds.values() for fault in kind.faults
    )
