"""Platform receipts: the data a ``platform-attested`` run pins (pure data, no I/O).

A receipts target is a small declarative spec (:class:`ReceiptsSpec`): which
provider (Steam's Web API or Xbox's REST API) to ask, about which title and
which user (named by an environment variable, never written here), and which
milestones count (an achievement that unlocks, a stat that reaches a
threshold). The provider is read once before the run (``baseline``) and once
after (``final``); a milestone is earned only when the baseline did not
already hold it and the final reading does.

A run record of such a target carries a :class:`Receipts` section: the spec,
the user id the provider was asked about, the name of the game the agent
acted on, every raw response body with its SHA-256, and what was judged. A
verifier recomputes the judgement from the pinned bodies; it trusts the
provider's word at the time of reading and never re-executes the game.

Size bounds: one response body is at most :data:`MAX_RESPONSE_BYTES`, one
phase reads at most :data:`MAX_PAGES` pages per endpoint, and all pinned
bodies of a run together are at most :data:`MAX_PINNED_BYTES`, so a record
with its receipts (JSON escaping at most doubles a body) stays well under
the record size bound of 16 MiB.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from playproof.core.canonical import digest, sha256_hex
from playproof.core.contract import Contract, Milestone, MilestoneId, ValueCheck

__all__ = [
    "MAX_ITEMS",
    "MAX_MILESTONES",
    "MAX_PAGES",
    "MAX_PINNED_BYTES",
    "MAX_RESPONSE_BYTES",
    "RECEIPTS_SCHEMA",
    "RECEIPTS_SPEC_SCHEMA",
    "JudgedMilestone",
    "PinnedResponse",
    "Receipts",
    "ReceiptsMilestone",
    "ReceiptsSpec",
    "receipts_build_digest",
    "receipts_contract",
]

RECEIPTS_SPEC_SCHEMA: Final = "playproof/receipts-target/v1"
RECEIPTS_SCHEMA: Final = "playproof/receipts/v1"

MAX_RESPONSE_BYTES: Final = 512 * 1024
"""The largest response body one provider request may return."""
MAX_PAGES: Final = 8
"""Pages one endpoint may span in one phase (Xbox pages; Steam answers in one page)."""
MAX_ITEMS: Final = 2000
"""Achievements or stats one endpoint may list in one phase, over all its pages."""
MAX_PINNED_BYTES: Final = 4 * 1024 * 1024
"""All response bodies pinned by one run, together."""
MAX_MILESTONES: Final = 256
"""Milestones one receipts spec may declare."""

Provider = Literal["steam", "xbox"]
Phase = Literal["baseline", "final"]
Endpoint = Literal["steam-achievements", "steam-stats", "xbox-achievements"]
Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
ShortText = Annotated[str, Field(min_length=1, max_length=256)]
ApiName = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f]+$")]
EnvName = Annotated[str, Field(pattern=r"^[A-Z_][A-Z0-9_]{0,63}$")]
TitleId = Annotated[str, Field(pattern=r"^[0-9]{1,20}$")]
UserId = Annotated[str, Field(pattern=r"^[0-9]{1,20}$")]
BaseUrl = Annotated[str, Field(pattern=r"^https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~/\-]*)?$")]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ReceiptsMilestone(_Frozen):
    """One milestone: an achievement (by API name or id) that unlocks, or a stat at a threshold."""

    id: MilestoneId
    achievement: ApiName | None = None
    stat: ApiName | None = None
    at_least: Annotated[int, Field(ge=1, le=2**53 - 1)] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        if (self.achievement is None) == (self.stat is None):
            raise ValueError(f"milestone {self.id} names exactly one of achievement or stat")
        if (self.stat is None) != (self.at_least is None):
            raise ValueError(f"milestone {self.id}: a stat milestone (only) needs at_least")
        return self

    @property
    def key(self) -> str:
        """The evidence key its contract check reads (``achievement:NAME`` or ``stat:NAME``)."""
        return f"achievement:{self.achievement}" if self.achievement else f"stat:{self.stat}"

    @property
    def threshold(self) -> int:
        """The value the reading must reach: 1 (unlocked) for an achievement."""
        return self.at_least if self.at_least is not None else 1


class ReceiptsSpec(_Frozen):
    """A receipts target: provider, title, where the user id and key come from, milestones.

    ``title_id`` is Steam's app id or Xbox's decimal title id. ``user_env``
    and ``key_env`` name the environment variables holding the user id
    (SteamID64 or XUID) and the credential (a Steam Web API key, or an Xbox
    ``Authorization`` header value); neither value is ever written to a
    record. ``play`` is the registered target the agent acts on meanwhile.
    ``game_name`` (Steam's ``gameName``), ``service_config_id`` and ``build``
    (an Xbox title association's ``version``) are checked against every
    response when given. Steam stats are read only when a stat milestone
    exists; Xbox has achievements only.
    """

    schema_: Literal["playproof/receipts-target/v1"] = Field(RECEIPTS_SPEC_SCHEMA, alias="schema")
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
    provider: Provider
    title_id: TitleId
    play: ShortText
    user_env: EnvName
    key_env: EnvName
    base_url: BaseUrl | None = None
    game_name: ShortText | None = None
    service_config_id: ShortText | None = None
    build: ShortText | None = None
    milestones: Annotated[tuple[ReceiptsMilestone, ...], Field(min_length=1)]

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if len(self.milestones) > MAX_MILESTONES:
            raise ValueError(f"{len(self.milestones)} milestones; at most {MAX_MILESTONES}")
        ids = [m.id for m in self.milestones]
        if len(set(ids)) != len(ids):
            raise ValueError("a milestone id is declared twice")
        keys = [m.key for m in self.milestones]
        if len(set(keys)) != len(keys):
            raise ValueError("two milestones read the same achievement or stat")
        if self.provider == "xbox":
            if any(m.stat is not None for m in self.milestones):
                raise ValueError("Xbox receipts read achievements only; remove the stat milestones")
            if self.game_name is not None:
                raise ValueError("game_name is checked on Steam only; use service_config_id")
        elif self.service_config_id is not None or self.build is not None:
            raise ValueError(
                "Steam's responses carry no service config id or build; remove them from the spec"
            )
        return self

    @property
    def reads_stats(self) -> bool:
        """True when a stat milestone makes the Steam stats endpoint part of each reading."""
        return any(m.stat is not None for m in self.milestones)

    def to_json(self) -> dict[str, object]:
        """The normalized JSON form (what the build digest covers)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def receipts_contract(spec: ReceiptsSpec) -> Contract:
    """The contract a receipts spec stands for: one ``state`` check per milestone."""
    return Contract(
        game=spec.name,
        milestones=tuple(
            Milestone(
                id=m.id,
                check=ValueCheck(kind="state", key=m.key, op=">=", value=m.threshold),
            )
            for m in spec.milestones
        ),
    )


def receipts_build_digest(spec: ReceiptsSpec, played_digest: str) -> str:
    """The build digest a receipts run pins: the spec and the build the agent played."""
    return digest({"spec": spec.to_json(), "played": played_digest})


class PinnedResponse(_Frozen):
    """One raw provider response: which phase, endpoint and page, the request, the body.

    ``request`` is the path and query that was asked, with the credential
    left out; ``sha256`` is over the body's UTF-8 bytes, exactly as received.
    """

    phase: Phase
    endpoint: Endpoint
    page: Annotated[int, Field(ge=0, lt=MAX_PAGES)]
    request: Annotated[str, Field(min_length=1, max_length=2048)]
    sha256: Sha256Hex
    body: Annotated[str, Field(max_length=MAX_RESPONSE_BYTES)]
    received_at: ShortText

    @property
    def intact(self) -> bool:
        """True when the body hashes to the pinned digest."""
        return sha256_hex(self.body.encode("utf-8", "surrogatepass")) == self.sha256


class JudgedMilestone(_Frozen):
    """What the baseline and final readings said of one milestone, and whether it was earned.

    ``baseline``/``final`` are the values read (1 or 0 for an achievement's
    unlock state; None when the provider did not list it). ``earned`` is
    True only when the baseline fell short of the threshold and the final
    reading reached it.
    """

    id: MilestoneId
    key: Annotated[str, Field(min_length=1, max_length=160)]
    threshold: int
    baseline: int | None
    final: int | None
    earned: bool


class Receipts(_Frozen):
    """The receipts section of a platform-attested record (see the module docstring)."""

    schema_: Literal["playproof/receipts/v1"] = Field(RECEIPTS_SCHEMA, alias="schema")
    spec: ReceiptsSpec
    user: UserId
    played: ShortText
    played_digest: Sha256Hex
    baseline_at: ShortText
    final_at: ShortText
    responses: Annotated[tuple[PinnedResponse, ...], Field(max_length=4 * MAX_PAGES)]
    judged: tuple[JudgedMilestone, ...]

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _bounded(self) -> Self:
        total = sum(len(r.body) for r in self.responses)
        if total > MAX_PINNED_BYTES:
            raise ValueError(f"pinned bodies hold {total} characters; at most {MAX_PINNED_BYTES}")
        return self
