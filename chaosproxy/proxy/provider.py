"""A model call's upstream leg: paced, and re-sent when the real provider says 429 or 5xx.

Only model calls the proxy forwards come here (an injected fault's synthetic reply never
reaches the provider). Before each send the leg waits for the `ModelPacer`, if one is set
(`paced_ms` on the call's record: time waited, never part of an injected delay). A reply
from the provider with a retryable status (429, 500, 502, 503, 504, 529) is read, dropped
and the request sent again, up to `ProxyLimits.provider_retries` times, after the
provider's `retry-after-ms` / `Retry-After` (capped at `provider_retry_max_wait_s`) or an
exponential backoff (`provider_backoff_s` · 2^n, capped the same): `provider_retries` on
the record. The status is known before any byte is relayed, so a stream is re-sent only
then. Retries exhausted, the provider's last reply goes to the agent as it came (no
fault recorded) and the episode is marked as having had a service error, so a run records
it as `infra_error` instead of scoring the agent on the provider's outage (docs/scale.md).
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Mapping
from types import TracebackType

from multidict import CIMultiDict
from yarl import URL

from chaosproxy.pacing import estimate_tokens, usage_tokens
from chaosproxy.proxy.core import Core
from chaosproxy.proxy.effects import Said
from chaosproxy.proxy.exchange import Draft
from chaosproxy.proxy.settings import ProxyLimits
from chaosproxy.proxy.upstream import UpstreamCall, UpstreamFailure, UpstreamReply, read_all

RETRYABLE = frozenset({429, 500, 502, 503, 504, 529})
"""Provider statuses worth a re-send (529: Anthropic's overloaded); 501 and 505 are not."""

DRAIN_BYTES = 64 * 1024
"""A rejected reply's body is read up to this much before the re-send (keeps the connection)."""


def retry_wait(attempt: int, headers: Mapping[str, str], limits: ProxyLimits) -> float:
    """Seconds before re-send number `attempt` (0-based): the provider's `retry-after-ms`
    or `Retry-After` (seconds or an HTTP date), else `provider_backoff_s` · 2^attempt;
    never more than `provider_retry_max_wait_s`."""
    cap = limits.provider_retry_max_wait_s
    said = _retry_after(headers)
    wait = said if said is not None else limits.provider_backoff_s * (2**attempt)
    return max(0.0, min(wait, cap))


def _retry_after(given: Mapping[str, str]) -> float | None:
    headers = CIMultiDict(given)
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


class ModelLeg:
    """One model call's sends: `request(...)` is used like `Upstream.request(...)`;
    `settle()` (once the reply was read) tells the pacer the tokens really spent."""

    __slots__ = ("_args", "_core", "_draft", "_estimate", "_open", "_owed", "_said", "_status")

    def __init__(self, core: Core, draft: Draft, said: Said, body: bytes) -> None:
        self._core, self._draft, self._said = core, draft, said
        self._estimate = estimate_tokens(body) if core.pacer is not None else 0
        self._open: UpstreamCall | None = None
        self._status: int | None = None
        self._owed = False
        """A send was paced and its tokens are not settled yet (settled once per send)."""

    def request(
        self,
        method: str,
        url: URL,
        headers: CIMultiDict[str],
        body: bytes,
        *,
        streaming: bool = False,
    ) -> ModelLeg:
        self._args = (method, url, headers, body, streaming)
        return self

    async def _paced(self) -> None:
        pacer = self._core.pacer
        if pacer is None:
            return
        waited = time.perf_counter()
        await pacer.acquire(self._estimate)
        self._owed = True
        draft = self._draft
        draft.paced_ms = round((draft.paced_ms or 0.0) + (time.perf_counter() - waited) * 1000.0, 3)

    async def __aenter__(self) -> UpstreamReply:
        core, draft = self._core, self._draft
        method, url, headers, body, streaming = self._args
        limits = core.upstream.limits
        attempt = 0
        while True:
            await self._paced()
            call = core.upstream.request(method, url, headers, body, streaming=streaming)
            reply = await call.__aenter__()
            self._status = reply.status
            if reply.status not in RETRYABLE or attempt >= limits.provider_retries:
                self._open = call
                if reply.status in RETRYABLE and attempt > 0:
                    draft.error = (
                        f"the provider answered {reply.status} after {attempt} re-send(s) "
                        "(not an injected fault)"
                    )
                    if reply.status < 500:  # 5xx are counted by `finish` already
                        core.book.note_service_error(draft.route.episode)
                return reply
            wait = retry_wait(attempt, reply.headers, limits)
            try:
                await read_all(reply, DRAIN_BYTES)
            except UpstreamFailure:
                pass
            finally:
                await call.__aexit__(None, None, None)
            self._settle(0)
            attempt += 1
            draft.provider_retries = attempt
            if wait > 0:
                draft.provider_wait_ms = round(draft.provider_wait_ms + wait * 1000.0, 3)
                await asyncio.sleep(wait)

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        call, self._open = self._open, None
        if call is not None:
            await call.__aexit__(kind, error, trace)

    def _settle(self, actual: int) -> None:
        pacer = self._core.pacer
        if pacer is not None and self._owed:
            self._owed = False
            pacer.settle(self._estimate, actual)

    def settle(self) -> None:
        """Tell the pacer the last send's real tokens: the reply's `usage`; without one, the
        estimate when the provider answered (nothing changes), 0 when it refused or was not
        reached."""
        if self._core.pacer is None or not self._owed:
            return
        actual = usage_tokens(self._said.usage)
        if actual is None:
            status = self._status
            actual = self._estimate if status is not None and status < 400 else 0
        self._settle(actual)
