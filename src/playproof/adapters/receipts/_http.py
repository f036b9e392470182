"""One bounded GET against a provider: size, time, no redirects, no credential in any message.

Requests go straight to an httpx transport (not through a client), so no
request line with its query string (Steam's key travels in the query) is
ever logged by the HTTP library. The body is read as a stream and abandoned
one byte past the bound; the whole request, headers and body, must finish
within its time limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from playproof.errors import ReceiptError

__all__ = ["REQUEST_TIMEOUT_S", "Fetched", "fetch"]

REQUEST_TIMEOUT_S = 20.0
"""The longest one provider request may take, headers and body together."""


@dataclass(frozen=True, slots=True)
class Fetched:
    """A reply's body (valid UTF-8 text) and its status."""

    status: int
    body: str


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every secret replaced by ``[credential]``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[credential]")
    return text


async def _read(response: httpx.Response, limit: int, what: str) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ReceiptError(
            f"{what}: the reply declares {declared} bytes, over the {limit}-byte bound"
        )
    if response.headers.get("content-encoding", "identity").lower() != "identity":
        raise ReceiptError(f"{what}: the reply is compressed though none was asked for")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > limit:
            raise ReceiptError(f"{what}: the reply runs over the {limit}-byte bound")
        chunks.append(chunk)
    return b"".join(chunks)


async def fetch(
    transport: httpx.AsyncBaseTransport,
    url: str,
    *,
    headers: Mapping[str, str],
    limit: int,
    timeout_s: float,
    what: str,
    secrets: tuple[str, ...],
) -> Fetched:
    """GET ``url`` through ``transport`` and return the body, or raise ReceiptError.

    ``secrets`` are removed from every message this raises (a transport error
    may quote the URL, and Steam's key is in it).
    """
    request = httpx.Request("GET", url, headers={"accept": "application/json", **headers})
    try:
        async with asyncio.timeout(timeout_s):
            response = await transport.handle_async_request(request)
            try:
                raw = await _read(response, limit, what)
            finally:
                await response.aclose()
    except TimeoutError as exc:
        raise ReceiptError(f"{what}: no complete reply within {timeout_s:.3g} s") from exc
    except httpx.HTTPError as exc:
        message = redact(f"{what}: the request failed ({type(exc).__name__}: {exc})", secrets)
        raise ReceiptError(message) from None
    if response.status_code != 200:
        raise ReceiptError(
            f"{what}: HTTP {response.status_code}; check the credential, the ids and the base URL"
        )
    try:
        body = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReceiptError(f"{what}: the reply is not UTF-8 text") from exc
    if any(secret and secret in body for secret in secrets):
        raise ReceiptError(f"{what}: the reply repeats the credential; refusing to pin it")
    return Fetched(response.status_code, body)
