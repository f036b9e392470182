"""Evidence sources: Steam's Web API and Xbox's REST API, read once per phase.

A source reads one phase (``baseline`` before the run, ``final`` after)
and returns the raw responses to pin plus the reading they give. Each
response is judged as it arrives by the same functions the verifier uses,
so a run fails closed (a :class:`~playproof.errors.ReceiptError`, no record)
on anything the verifier would refuse.

Steam: ``GET {base}/ISteamUserStats/GetPlayerAchievements/v1/`` and, when a
stat milestone exists, ``GET {base}/ISteamUserStats/GetUserStatsForGame/v2/``,
with ``appid``, ``steamid`` and ``key`` in the query. Xbox:
``GET {base}/users/xuid({xuid})/achievements?titleId=...&maxItems=...``
with ``x-xbl-contract-version: 2`` and the ``Authorization`` header, following
``pagingInfo.continuationToken`` for at most MAX_PAGES pages.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlencode

import httpx

from playproof.adapters.receipts._http import REQUEST_TIMEOUT_S, fetch
from playproof.core.canonical import sha256_hex
from playproof.core.receipts import (
    MAX_PAGES,
    MAX_PINNED_BYTES,
    MAX_RESPONSE_BYTES,
    PinnedResponse,
    ReceiptsSpec,
)
from playproof.errors import ReceiptError
from playproof.verify._receipts import STEAM_PATHS, Reading, parse_xbox_page, reading_of

__all__ = [
    "DEFAULT_BASE_URLS",
    "MAX_SECRET_CHARS",
    "MIN_SECRET_CHARS",
    "PHASE_DEADLINE_S",
    "USER_ID",
    "XBOX_PAGE_ITEMS",
    "Credentials",
    "ReceiptsSource",
]

DEFAULT_BASE_URLS = {
    "steam": "https://api.steampowered.com",
    "xbox": "https://achievements.xboxlive.com",
}
"""Where each provider is asked when the spec names no base URL."""
PHASE_DEADLINE_S = 60.0
"""The longest one phase (every request and page of it) may take."""
XBOX_PAGE_ITEMS = 250
"""Achievements asked for per Xbox page (``maxItems``)."""
MIN_SECRET_CHARS = 16
"""The shortest credential accepted (see :class:`Credentials`)."""
MAX_SECRET_CHARS = 8192
"""The longest credential accepted."""
USER_ID = re.compile(r"^[0-9]{1,20}$")
"""A SteamID64 or an XUID: decimal digits."""


@dataclass(frozen=True, slots=True)
class Credentials:
    """The user id and the credential, from the environment; never written anywhere.

    The credential is at least MIN_SECRET_CHARS long (a Steam Web API key has
    32 characters, an Xbox authorization header hundreds), so that a reply
    that repeats it can be told apart from one that happens to contain a
    short string.
    """

    user: str
    secret: str = field(repr=False)

    def __post_init__(self) -> None:
        if not USER_ID.match(self.user):
            raise ReceiptError("the user id must be numeric (a SteamID64 or an XUID)")
        secret = self.secret
        if not MIN_SECRET_CHARS <= len(secret) <= MAX_SECRET_CHARS or not secret.isprintable():
            raise ReceiptError(
                f"the credential must be {MIN_SECRET_CHARS} to {MAX_SECRET_CHARS} printable "
                "characters"
            )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class ReceiptsSource:
    """Reads one provider for one spec and one user, within size, page and time bounds.

    ``transport`` is the httpx transport requests go through (tests may hand
    one in); ``timeout_s`` bounds one request and ``deadline_s`` one phase.
    """

    def __init__(
        self,
        spec: ReceiptsSpec,
        credentials: Credentials,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout_s: float = REQUEST_TIMEOUT_S,
        deadline_s: float = PHASE_DEADLINE_S,
    ) -> None:
        self.spec = spec
        self._credentials = credentials
        self._transport = transport
        self._timeout_s = timeout_s
        self._deadline_s = deadline_s
        self._pinned_bytes = 0
        self._owned: httpx.AsyncBaseTransport | None = None
        base = spec.base_url or DEFAULT_BASE_URLS[spec.provider]
        self._base = base.rstrip("/")

    async def aclose(self) -> None:
        """Close the transport this source opened (one handed in is the caller's)."""
        if self._owned is not None:
            await self._owned.aclose()
            self._owned = None

    def _http(self) -> httpx.AsyncBaseTransport:
        if self._transport is None:
            self._owned = self._transport = httpx.AsyncHTTPTransport(retries=0)
        return self._transport

    async def read(self, phase: str) -> tuple[tuple[PinnedResponse, ...], Reading]:
        """Read one phase: the responses to pin and the reading they give (or ReceiptError)."""
        deadline = time.monotonic() + self._deadline_s
        if self.spec.provider == "steam":
            pinned = await self._steam(phase, deadline)
        else:
            pinned = await self._xbox(phase, deadline)
        user = self._credentials.user
        return pinned, reading_of(self.spec, user, pinned, phase)

    async def _get(
        self,
        phase: str,
        endpoint: str,
        page: int,
        request: str,
        secret_query: dict[str, str],
        headers: dict[str, str],
        deadline: float,
    ) -> PinnedResponse:
        what = f"{phase} {endpoint}" + (f" page {page + 1}" if page else "")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ReceiptError(f"{what}: the phase took over {self._deadline_s:g} s")
        joiner = "&" if "?" in request else "?"
        url = self._base + request + (joiner + urlencode(secret_query) if secret_query else "")
        fetched = await fetch(
            self._http(),
            url,
            headers=headers,
            limit=MAX_RESPONSE_BYTES,
            timeout_s=min(self._timeout_s, remaining),
            what=what,
            secrets=(self._credentials.secret,),
        )
        self._pinned_bytes += len(fetched.body)
        if self._pinned_bytes > MAX_PINNED_BYTES:
            raise ReceiptError(f"{what}: the replies of this run pass {MAX_PINNED_BYTES} bytes")
        return PinnedResponse(
            phase=phase,
            endpoint=endpoint,
            page=page,
            request=request,
            sha256=sha256_hex(fetched.body.encode("utf-8")),
            body=fetched.body,
            received_at=_now(),
        )

    async def _steam(self, phase: str, deadline: float) -> tuple[PinnedResponse, ...]:
        query = urlencode({"appid": self.spec.title_id, "steamid": self._credentials.user})
        endpoints = ["steam-achievements"] + (["steam-stats"] if self.spec.reads_stats else [])
        key = {"key": self._credentials.secret}
        return tuple(
            [
                await self._get(phase, e, 0, f"{STEAM_PATHS[e]}?{query}", key, {}, deadline)
                for e in endpoints
            ]
        )

    async def _xbox(self, phase: str, deadline: float) -> tuple[PinnedResponse, ...]:
        headers = {
            "x-xbl-contract-version": "2",
            "authorization": self._credentials.secret,
        }
        path = f"/users/xuid({self._credentials.user})/achievements"
        pinned: list[PinnedResponse] = []
        token: str | None = None
        seen: set[str] = set()
        for page in range(MAX_PAGES):
            query = {"titleId": self.spec.title_id, "maxItems": str(XBOX_PAGE_ITEMS)}
            if token is not None:
                query["continuationToken"] = token
            request = f"{path}?{urlencode(query)}"
            response = await self._get(
                phase, "xbox-achievements", page, request, {}, headers, deadline
            )
            pinned.append(response)
            token = parse_xbox_page(response.body, self.spec).token
            if token is None:
                return tuple(pinned)
            if token in seen:
                raise ReceiptError(f"{phase}: Xbox repeats a continuation token; refusing to loop")
            seen.add(token)
        raise ReceiptError(
            f"{phase}: Xbox still has more pages after {MAX_PAGES}; the title lists too many "
            "achievements for a receipt"
        )
