"""The OpenAI-compatible HTTP driver (hosted APIs, gateways and local model servers).

One ``POST {base_url}/chat/completions`` per decision, non-streaming. The API
key is read from an environment variable the user names (never from an
argument, never written to the record). The response body is read as a stream
and abandoned at the byte cap, and a gzip or deflate body is inflated by the
driver itself under the same cap; every attempt has a timeout and the decision
as a whole a deadline. Redirects are not followed and cookies are never kept.
HTTP 429 and 5xx are retried with bounded exponential backoff (``Retry-After``
honoured up to the backoff cap); each retry, and any cost a failed attempt
reports, is counted in ``provenance()`` and the reported cost of failed
attempts is charged to the decision. Everything else is a
:class:`~playproof.errors.DriverError`.

Cost: provider-reported first, else token usage times declared :class:`Pricing`,
else unmeasured (``None``); see :mod:`playproof.drivers._cost`.
"""

from __future__ import annotations

import asyncio
import email.utils
import http.cookiejar
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from playproof._bounded import ACCEPTED_ENCODINGS, decode_content
from playproof.core.agent import Action, DecisionContext, HistoryEntry, normalize_input
from playproof.core.observation import Observation
from playproof.drivers._answer import first_word
from playproof.drivers._cancel import CancelScope
from playproof.drivers._chat import build_messages, reply_text
from playproof.drivers._cost import Pricing, reply_cost
from playproof.errors import DriverError, PlayproofError

__all__ = [
    "DEFAULT_BACKOFF_S",
    "DEFAULT_DEADLINE_S",
    "DEFAULT_MAX_BACKOFF_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT_S",
    "ERROR_SNIPPET_CHARS",
    "OpenAIDriver",
    "Pricing",
]

DEFAULT_MAX_BODY_BYTES = 2 << 20
"""Response body bytes read per attempt before the reply is abandoned."""
DEFAULT_TIMEOUT_S = 60.0
"""Wall time of one attempt: connect, send, headers and the whole body."""
DEFAULT_DEADLINE_S = 300.0
"""Wall time of one decision, retries and backoff included."""
DEFAULT_MAX_RETRIES = 3
DEFAULT_BACKOFF_S = 0.5
"""First backoff; doubled after each retry."""
DEFAULT_MAX_BACKOFF_S = 8.0
"""Cap on one backoff, ``Retry-After`` included."""
ERROR_SNIPPET_CHARS = 300
"""How much of an error body, or of the HTTP library's complaint, an error message quotes."""
_RESERVED_BODY_KEYS = frozenset({"model", "messages", "stream"})
_SOURCE_COUNTER = {
    "provider": "cost_from_provider",
    "pricing": "cost_from_pricing",
    "unmeasured": "cost_unmeasured",
}


class _RetryableError(Exception):
    """A 429 or 5xx answer: worth another attempt after ``delay`` seconds."""

    def __init__(self, status: int, delay: float | None, cost: float | None) -> None:
        super().__init__(status)
        self.status = status
        self.delay = delay
        self.cost = cost


def _public_url(url: str) -> str:
    """The URL without credentials, query or fragment, for the actor id."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP date), if usable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):  # a year or zone past any clock
        return None
    return max(0.0, when.timestamp() - time.time())


class OpenAIDriver:
    """Ask an OpenAI-compatible chat-completions endpoint for one input per decision."""

    kind = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str | None = None,
        system_prompt: str | None = None,
        history_limit: int = 8,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
        vision: bool = False,
        pricing: Pricing | None = None,
        parser: Callable[[str], str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        deadline_s: float = DEFAULT_DEADLINE_S,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_s: float = DEFAULT_BACKOFF_S,
        max_backoff_s: float = DEFAULT_MAX_BACKOFF_S,
    ) -> None:
        if not model or "\x00" in model:
            raise DriverError("model must be a non-empty name without NUL")
        try:
            parts = urlsplit(base_url)
            _ = parts.port  # a port that is not a number in 0..65535 raises here
        except ValueError as exc:
            raise DriverError(f"base URL {base_url!r} cannot be parsed: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise DriverError(f"base URL must be http(s)://host[:port]/path, got {base_url!r}")
        if not (timeout_s > 0 and deadline_s > 0 and max_body_bytes > 0):
            raise DriverError("timeout, deadline and body cap must be positive")
        if max_retries < 0 or backoff_s < 0 or max_backoff_s < 0 or history_limit < 0:
            raise DriverError("retries, backoff and history limit must be non-negative")
        extra = dict(extra_body or {})
        if reserved := sorted(_RESERVED_BODY_KEYS & extra.keys()):
            raise DriverError(f"extra_body may not set {', '.join(reserved)}")
        try:
            json.dumps(extra, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise DriverError(f"extra_body is not JSON: {exc}") from exc
        self._headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "accept-encoding": ACCEPTED_ENCODINGS,
        }
        if api_key_env is not None:
            key = os.environ.get(api_key_env, "")
            if not key:
                raise DriverError(f"the environment variable {api_key_env} (API key) is not set")
            if not all("!" <= char <= "~" for char in key):
                # Never quoted: the HTTP library's own complaint would print the whole key.
                raise DriverError(
                    f"the API key in {api_key_env} holds white space, a control character or a "
                    "non-ASCII character, which no HTTP header can carry"
                )
            self._headers["authorization"] = f"Bearer {key}"
        self._model = model
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._system_prompt = system_prompt
        self._history_limit = history_limit
        self._max_tokens = max_tokens
        self._temperature = temperature
        self._extra = extra
        self._vision = vision
        self._pricing = pricing
        self._parser = parser
        self._timeout_s = timeout_s
        self._deadline_s = deadline_s
        self._max_body = max_body_bytes
        self._max_retries = max_retries
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self.id = f"{model}@{_public_url(base_url)}"[:512]
        self.label = f"{self.kind}:{self.id}"
        """The actor as ``kind:id``, for messages (the record keeps kind and id apart)."""
        self._client: httpx.AsyncClient | None = None
        self._scope = CancelScope()
        self._counters: dict[str, int] = {
            "requests": 0,
            "retries": 0,
            "replies": 0,
            "cost_from_provider": 0,
            "cost_from_pricing": 0,
            "cost_unmeasured": 0,
            "prompt_tokens": 0,
            "cached_tokens": 0,
            "completion_tokens": 0,
        }
        self._retry_cost = 0.0

    def __repr__(self) -> str:
        return f"OpenAIDriver(id={self.id!r})"

    async def act(
        self, observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> Action:
        """Ask the model for one input and measure what the answer cost."""
        body: dict[str, Any] = {
            "model": self._model,
            "messages": build_messages(
                observation,
                history,
                context,
                system_prompt=self._system_prompt,
                history_limit=self._history_limit,
                vision=self._vision,
            ),
        }
        if self._max_tokens is not None:
            body["max_tokens"] = self._max_tokens
        if self._temperature is not None:
            body["temperature"] = self._temperature
        body.update(self._extra)
        return await self._scope.run(self._decide(body, context.vocabulary), context.cancel)

    def provenance(self) -> dict[str, Any]:
        """Health counters: requests, retries, cost sources, tokens, cost of failed attempts."""
        return {**self._counters, "retry_cost_usd": self._retry_cost}

    async def aclose(self) -> None:
        """Close the connection pool."""
        self._scope.close()
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def _decide(self, body: dict[str, Any], vocabulary: Sequence[str]) -> Action:
        payload = json.dumps(body, allow_nan=False).encode("utf-8")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._deadline_s
        failed_cost = 0.0
        for attempt in range(self._max_retries + 1):
            try:
                reply, headers = await self._attempt(payload, deadline)
            except _RetryableError as retry:
                if retry.cost is not None:
                    failed_cost += retry.cost
                    self._retry_cost += retry.cost
                if attempt == self._max_retries:
                    raise DriverError(
                        f"{self.label}: HTTP {retry.status} on all {attempt + 1} attempts"
                    ) from None
                backoff = min(self._backoff_s * 2**attempt, self._max_backoff_s)
                if retry.delay is not None:
                    backoff = min(retry.delay, self._max_backoff_s)
                if loop.time() + backoff >= deadline:
                    raise DriverError(
                        f"{self.label}: HTTP {retry.status}, and the {self._deadline_s} s deadline "
                        "leaves no time to retry"
                    ) from None
                self._counters["retries"] += 1
                await asyncio.sleep(backoff)
                continue
            return self._action(reply, headers, vocabulary, failed_cost)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _action(
        self,
        reply: Mapping[str, Any],
        headers: Mapping[str, str],
        vocabulary: Sequence[str],
        failed_cost: float,
    ) -> Action:
        text = reply_text(reply)
        cost, source, tokens = reply_cost(reply, headers, self._pricing)
        self._counters["replies"] += 1
        self._counters[_SOURCE_COUNTER[source]] += 1
        if tokens is not None:
            self._counters["prompt_tokens"] += tokens.prompt
            self._counters["cached_tokens"] += tokens.cached
            self._counters["completion_tokens"] += tokens.completion
        if cost is not None:
            cost += failed_cost
        if self._parser is not None:
            try:
                chosen = normalize_input(self._parser(text), vocabulary)
            except Exception as exc:
                raise DriverError(f"{self.label}: the reply parser failed: {exc!r}") from exc
        else:
            chosen = first_word(text, vocabulary)
        return Action(chosen, cost)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self._timeout_s),
                follow_redirects=False,
                cookies=_no_cookies(),
            )
        return self._client

    async def _attempt(
        self, payload: bytes, deadline: float
    ) -> tuple[dict[str, Any], Mapping[str, str]]:
        """One POST; returns the parsed body and headers, or raises _RetryableError/DriverError."""
        remaining = deadline - asyncio.get_running_loop().time()
        limit = min(self._timeout_s, remaining)
        if limit <= 0:
            raise DriverError(f"{self.label}: the {self._deadline_s} s decision deadline passed")
        self._counters["requests"] += 1
        try:
            async with asyncio.timeout(limit):
                request = self._http().build_request(
                    "POST", self._url, content=payload, headers=self._headers
                )
                response = await self._http().send(request, stream=True)
                try:
                    encoded = await self._read_body(response)
                finally:
                    await response.aclose()
        except (TimeoutError, httpx.TimeoutException):
            raise DriverError(f"{self.label}: no complete reply within {limit:.3g} s") from None
        except httpx.HTTPError as exc:
            # The library's message may quote what the server sent (a whole bad status line).
            said = str(exc)[:ERROR_SNIPPET_CHARS]
            raise DriverError(f"{self.label}: {type(exc).__name__}: {said}") from None
        status = response.status_code
        try:
            raw = decode_content(
                encoded, response.headers.get("content-encoding"), self._max_body, DriverError
            )
        except DriverError as exc:
            if status == 200:
                raise DriverError(f"{self.label}: {exc}") from None
            raw = b""  # an error answer's body is only quoted (or read for a cost)
        if status == 429 or 500 <= status <= 599:
            cost = _failed_attempt_cost(raw, response.headers)
            raise _RetryableError(status, _retry_after(response.headers.get("retry-after")), cost)
        if status != 200:
            snippet = raw[:ERROR_SNIPPET_CHARS].decode("utf-8", errors="replace")
            raise DriverError(f"{self.label}: HTTP {status}: {snippet}")
        try:
            parsed = json.loads(raw)
        except ValueError as exc:
            raise DriverError(f"{self.label}: the reply is not JSON: {exc}") from None
        except RecursionError:
            raise DriverError(f"{self.label}: the reply's JSON is nested too deeply") from None
        if not isinstance(parsed, dict):
            kind = type(parsed).__name__
            raise DriverError(f"{self.label}: the reply is a JSON {kind}, not object")
        return parsed, response.headers

    async def _read_body(self, response: httpx.Response) -> bytes:
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._max_body:
            raise DriverError(
                f"{self.label}: the reply declares {declared} bytes, "
                f"over the {self._max_body}-byte cap"
            )
        # Raw bytes: a compressed body is decoded afterwards, bounded (see decode_content), never
        # by the HTTP library, which would inflate a whole chunk however far it expands.
        body = bytearray()
        async for chunk in response.aiter_raw():
            body += chunk
            if len(body) > self._max_body:
                raise DriverError(f"{self.label}: the reply is over the {self._max_body}-byte cap")
        return bytes(body)


def _no_cookies() -> http.cookiejar.CookieJar:
    """A cookie jar that keeps nothing: a server setting new cookies on every reply would
    otherwise grow it, and the Cookie header sent back, without bound."""
    return http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


def _failed_attempt_cost(raw: bytes, headers: Mapping[str, str]) -> float | None:
    """The cost a 429/5xx answer reports, if any (best effort: a bad body reports none)."""
    try:
        parsed = json.loads(raw) if raw else {}
        return reply_cost(parsed, headers, None)[0] if isinstance(parsed, dict) else None
    except (ValueError, RecursionError, PlayproofError):
        return None
