"""Platform receipts: read provider responses, judge milestones, verify a platform-attested record.

The same pure functions serve the recorder and the verifier: a response
body becomes a :class:`Reading` (the values a provider reported for one
user and title), two readings (baseline and final) become the judged
milestones. Everything that disagrees with the spec (provider, title, user,
service config, build, item and page bounds, a stat that goes backwards, an
achievement that locks again) raises :class:`~playproof.errors.ReceiptError`:
a run fails closed on it, and the verifier turns it into a failed check.

The verifier (:func:`attest_receipts`) needs no game: it recomputes the
judgement from the response bodies pinned in the record, after checking
each body against its digest. What it relies on is the provider's word at
the time of reading; the game is not re-executed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from playproof.core.canonical import parse_json
from playproof.core.contract import Contract
from playproof.core.game import ReplayResult, VerificationMode
from playproof.core.receipts import (
    MAX_ITEMS,
    MAX_RESPONSE_BYTES,
    JudgedMilestone,
    PinnedResponse,
    Receipts,
    ReceiptsSpec,
    receipts_build_digest,
    receipts_contract,
)
from playproof.core.record import RunRecord
from playproof.core.report import CheckResult, VerificationReport
from playproof.core.tracker import PassedMilestone
from playproof.errors import FormatError, PlayproofError, ReceiptError
from playproof.verify._attest import (
    Admission,
    Reproduction,
    VerificationInputs,
    parse_record,
    verify_by_mode,
)

__all__ = [
    "PROVIDER_NAMES",
    "STEAM_PATHS",
    "Reading",
    "ReceiptsVerifier",
    "XboxPage",
    "attest_receipts",
    "check_timeline",
    "endpoints_of",
    "judge",
    "parse_steam_achievements",
    "parse_steam_stats",
    "parse_xbox_page",
    "reading_of",
    "receipts_verifier",
    "trust_statement",
]

PROVIDER_NAMES: Final = {"steam": "Steam's Web API", "xbox": "Xbox's REST API"}
"""How a report names the authority a platform-attested record relies on."""
STEAM_PATHS: Final = {
    "steam-achievements": "/ISteamUserStats/GetPlayerAchievements/v1/",
    "steam-stats": "/ISteamUserStats/GetUserStatsForGame/v2/",
}
"""The Steam Web API method each Steam endpoint asks (relative to the base URL)."""


@dataclass(frozen=True, slots=True)
class Reading:
    """What one phase's responses said: who, which title, and every value by key.

    ``values`` maps ``achievement:NAME`` to 1 (unlocked) or 0 and
    ``stat:NAME`` to the stat's integer value. ``title`` is Steam's game
    name or the Xbox title id; ``config`` and ``build`` are Xbox's service
    config id and title version (None on Steam).
    """

    user: str
    title: str | None
    config: str | None = None
    build: str | None = None
    values: Mapping[str, int] = field(default_factory=dict)
    achievements: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class XboxPage:
    """One page of Xbox achievements: the values, the continuation token, the stated total."""

    values: dict[str, int]
    config: str | None
    build: str | None
    token: str | None
    total: int | None


def _json(body: str, what: str) -> Any:
    try:
        return parse_json(body, limit=MAX_RESPONSE_BYTES, what=what)
    except FormatError as exc:
        raise ReceiptError(f"{exc}; the provider's reply cannot be used") from exc


def _object(value: Any, where: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise ReceiptError(f"{where} is not a JSON object; the reply is not the documented shape")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if type(value) is not list:
        raise ReceiptError(f"{where} is not a JSON array; the reply is not the documented shape")
    if len(value) > MAX_ITEMS:
        raise ReceiptError(f"{where} lists {len(value)} items, over the {MAX_ITEMS}-item bound")
    return value


def _text(value: Any, where: str) -> str:
    if type(value) is not str or not 0 < len(value) <= 256:
        raise ReceiptError(f"{where} is not a short string; the reply is not the documented shape")
    return value


def _integer(value: Any, where: str) -> int:
    if type(value) is not int or not -(2**63) <= value < 2**64:
        raise ReceiptError(f"{where} is not an integer; the reply is not the documented shape")
    return value


def _steam_stats_object(body: str, spec: ReceiptsSpec, user: str, what: str) -> dict[str, Any]:
    stats = _object(_object(_json(body, what), what).get("playerstats"), f"{what}: playerstats")
    if "error" in stats or stats.get("success") is False:
        raise ReceiptError(f"{what}: Steam answered with an error; check the app id and user")
    said = _text(stats.get("steamID"), f"{what}: playerstats.steamID")
    if said != user:
        raise ReceiptError(f"{what} is about another user than the spec's; refusing it")
    if spec.game_name is not None and stats.get("gameName") != spec.game_name:
        raise ReceiptError(f"{what} is about another game than {spec.game_name!r}; refusing it")
    return stats


def parse_steam_achievements(body: str, spec: ReceiptsSpec, user: str) -> Reading:
    """A GetPlayerAchievements (v1) reply: ``playerstats.achievements[{apiname, achieved}]``."""
    what = "Steam achievements"
    stats = _steam_stats_object(body, spec, user, what)
    if stats.get("success") is not True:
        raise ReceiptError(f"{what}: playerstats.success is not true; the reply cannot be used")
    values: dict[str, int] = {}
    for index, item in enumerate(_list(stats.get("achievements", []), f"{what}: achievements")):
        where = f"{what}: achievements.{index}"
        entry = _object(item, where)
        name = _text(entry.get("apiname"), f"{where}.apiname")
        achieved = _integer(entry.get("achieved"), f"{where}.achieved")
        if achieved not in (0, 1):
            raise ReceiptError(f"{where}.achieved is {achieved}, not 0 or 1")
        key = f"achievement:{name}"
        if key in values:
            raise ReceiptError(f"{what} lists the achievement {name!r} twice")
        values[key] = achieved
    title = stats.get("gameName")
    return Reading(
        user=user,
        title=title if type(title) is str else None,
        values=values,
        achievements=frozenset(values),
    )


def parse_steam_stats(body: str, spec: ReceiptsSpec, user: str) -> Reading:
    """A GetUserStatsForGame (v2) reply: ``playerstats.stats[{name, value}]``.

    Steam leaves out stats the user never set; a stat a milestone names must
    be an integer stat (a fractional value is refused).
    """
    what = "Steam stats"
    stats = _steam_stats_object(body, spec, user, what)
    named = {m.stat for m in spec.milestones if m.stat is not None}
    values: dict[str, int] = {}
    for index, item in enumerate(_list(stats.get("stats", []), f"{what}: stats")):
        where = f"{what}: stats.{index}"
        entry = _object(item, where)
        name = _text(entry.get("name"), f"{where}.name")
        value = entry.get("value")
        if type(value) is float and name not in named:
            continue  # a fractional stat no milestone reads
        key = f"stat:{name}"
        if key in values:
            raise ReceiptError(f"{what} lists the stat {name!r} twice")
        values[key] = _integer(value, f"{where}.value")
    title = stats.get("gameName")
    return Reading(user=user, title=title if type(title) is str else None, values=values)


def parse_xbox_page(body: str, spec: ReceiptsSpec) -> XboxPage:
    """One page of ``GET /users/xuid({xuid})/achievements?titleId=...`` (contract version 2).

    Every achievement must be associated with the spec's title (and its
    ``version`` be the spec's build, when given) and carry the spec's
    service config id (when given). An achievement counts as unlocked when
    its ``progressState`` is ``Achieved`` and it is not revoked.
    """
    what = "Xbox achievements"
    page = _object(_json(body, what), what)
    values: dict[str, int] = {}
    config: str | None = None
    build: str | None = None
    for index, item in enumerate(_list(page.get("achievements"), f"{what}: achievements")):
        where = f"{what}: achievements.{index}"
        entry = _object(item, where)
        ident = _text(entry.get("id"), f"{where}.id")
        scid = _text(entry.get("serviceConfigId"), f"{where}.serviceConfigId")
        if spec.service_config_id is not None and scid != spec.service_config_id:
            raise ReceiptError(f"{where} belongs to another service config than the spec's")
        if config is not None and scid != config:
            raise ReceiptError(f"{what} mixes achievements of two service configs")
        config = scid
        version = _title_version(entry.get("titleAssociations"), spec, where)
        if spec.build is not None and version != spec.build:
            raise ReceiptError(f"{where} is from another build of the title than the spec's")
        build = version if build is None else build
        if version != build:
            raise ReceiptError(f"{what} mixes achievements of two builds of the title")
        state = _text(entry.get("progressState"), f"{where}.progressState")
        revoked = entry.get("isRevoked", False)
        if type(revoked) is not bool:
            raise ReceiptError(f"{where}.isRevoked is not a boolean")
        key = f"achievement:{ident}"
        if key in values:
            raise ReceiptError(f"{what} lists the achievement {ident!r} twice")
        values[key] = int(state.lower() == "achieved" and not revoked)
    paging = _object(page.get("pagingInfo", {}), f"{what}: pagingInfo")
    token = paging.get("continuationToken")
    if token is not None:
        token = _text(token, f"{what}: pagingInfo.continuationToken")
    total = paging.get("totalRecords")
    if total is not None:
        total = _integer(total, f"{what}: pagingInfo.totalRecords")
    return XboxPage(values, config, build, token, total)


def _title_version(associations: Any, spec: ReceiptsSpec, where: str) -> str | None:
    for index, item in enumerate(_list(associations, f"{where}.titleAssociations")):
        entry = _object(item, f"{where}.titleAssociations.{index}")
        ident = entry.get("id")
        if type(ident) in (int, str) and str(ident) == spec.title_id:
            version = entry.get("version")
            return version if type(version) is str else None
    raise ReceiptError(f"{where} is not associated with title {spec.title_id}; refusing it")


def endpoints_of(spec: ReceiptsSpec) -> tuple[str, ...]:
    """The endpoints one phase reads for ``spec``, in order."""
    if spec.provider == "xbox":
        return ("xbox-achievements",)
    return ("steam-achievements", "steam-stats") if spec.reads_stats else ("steam-achievements",)


def _query(request: str) -> tuple[str, dict[str, list[str]]]:
    try:
        parts = urlsplit(request)
    except ValueError as exc:  # an unclosed IPv6 bracket, a port that is no number
        raise ReceiptError(f"the pinned request {request[:80]!r} is not a path and query") from exc
    return parts.path, parse_qs(parts.query, keep_blank_values=True)


def _instant(stamp: str, what: str) -> datetime:
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        raise ReceiptError(f"{what} {stamp[:40]!r} is not an ISO 8601 time") from None
    if when.utcoffset() != timedelta(0):
        raise ReceiptError(f"{what} {stamp[:40]!r} is not in UTC")
    return when


def check_timeline(record: RunRecord, receipts: Receipts) -> None:
    """The receipts' times against each other and the run; ReceiptError names the first problem.

    As the recorder writes them: every time is ISO 8601 UTC; the responses are
    listed in the order they were received, the baseline's before the final's;
    ``baseline_at`` and ``final_at`` are when each phase's last response was
    received; the baseline was read before the run started and the final
    reading began after it finished (to the millisecond the responses are
    stamped with). A record whose final reading predates its baseline or its
    run cannot say that the platform saw anything happen during the run.
    """
    responses = receipts.responses
    times = [
        _instant(r.received_at, f"{r.phase} {r.endpoint} page {r.page}: received_at")
        for r in responses
    ]
    phases = [r.phase for r in responses]
    ordered = all(a <= b for a, b in pairwise(times))
    if not ordered or phases != sorted(phases):  # "baseline" < "final"
        raise ReceiptError("the pinned responses are not in the order they were received")
    baseline = [t for p, t in zip(phases, times, strict=True) if p == "baseline"]
    final = [t for p, t in zip(phases, times, strict=True) if p == "final"]
    if not baseline or not final:
        raise ReceiptError("a phase has no pinned responses")
    if _instant(receipts.baseline_at, "baseline_at") != baseline[-1]:
        raise ReceiptError("baseline_at is not when the last baseline response was received")
    if _instant(receipts.final_at, "final_at") != final[-1]:
        raise ReceiptError("final_at is not when the last final response was received")
    started = _instant(record.started_at, "the record's started_at")
    finished = _instant(record.finished_at, "the record's finished_at")
    if baseline[-1] > started:
        raise ReceiptError("the baseline was read after the run started")
    if final[0] < finished.replace(microsecond=finished.microsecond // 1000 * 1000):
        raise ReceiptError("the final reading began before the run finished")


def _check_request(
    response: PinnedResponse, spec: ReceiptsSpec, user: str, token: str | None
) -> None:
    path, query = _query(response.request)
    where = f"{response.phase} {response.endpoint} page {response.page}"
    if any(k.lower() in ("key", "access_token", "authorization") for k in query):
        raise ReceiptError(f"{where}: the pinned request carries a credential")
    if spec.provider == "steam":
        if path != STEAM_PATHS.get(response.endpoint):
            raise ReceiptError(f"{where}: the request asks another Steam method")
        if query.get("appid") != [spec.title_id] or query.get("steamid") != [user]:
            raise ReceiptError(f"{where}: the request is not for the spec's app id and user")
        return
    if path != f"/users/xuid({user})/achievements":
        raise ReceiptError(f"{where}: the request is not for the spec's user")
    if query.get("titleId") != [spec.title_id]:
        raise ReceiptError(f"{where}: the request is not for the spec's title id")
    if query.get("continuationToken") != ([token] if token is not None else None):
        raise ReceiptError(f"{where}: the request does not continue from the previous page")


def reading_of(
    spec: ReceiptsSpec, user: str, responses: Sequence[PinnedResponse], phase: str
) -> Reading:
    """One phase's reading from its pinned responses (each endpoint's pages, in order)."""
    mine = [r for r in responses if r.phase == phase]
    values: dict[str, int] = {}
    title: str | None = None
    config: str | None = None
    build: str | None = None
    achievements: set[str] = set()
    for endpoint in endpoints_of(spec):
        pages = [r for r in mine if r.endpoint == endpoint]
        if [r.page for r in pages] != list(range(len(pages))) or not pages:
            raise ReceiptError(f"{phase} {endpoint}: pages missing or out of order")
        token: str | None = None
        listed = 0
        for number, response in enumerate(pages):
            _check_request(response, spec, user, token)
            if endpoint == "xbox-achievements":
                page = parse_xbox_page(response.body, spec)
                overlap = set(values) & set(page.values)
                if overlap:
                    raise ReceiptError(f"{phase}: an achievement is listed on two pages")
                values.update(page.values)
                achievements |= set(page.values)
                listed += len(page.values)
                config = page.config or config
                build = page.build or build
                title = spec.title_id
                if page.token is not None and number == len(pages) - 1:
                    raise ReceiptError(f"{phase}: the last pinned page still has a next page")
                if page.token is None and number < len(pages) - 1:
                    raise ReceiptError(f"{phase}: a page after the last page is pinned")
                if listed > MAX_ITEMS:
                    raise ReceiptError(f"{phase}: over {MAX_ITEMS} achievements over all pages")
                if page.token is None and page.total is not None and page.total != listed:
                    raise ReceiptError(
                        f"{phase}: Xbox says {page.total} achievements but listed {listed}"
                    )
                token = page.token
            else:
                if len(pages) != 1:
                    raise ReceiptError(f"{phase} {endpoint}: Steam answers in one page")
                parse = (
                    parse_steam_achievements
                    if endpoint == "steam-achievements"
                    else parse_steam_stats
                )
                reading = parse(response.body, spec, user)
                if title is not None and reading.title != title:
                    raise ReceiptError(f"{phase}: Steam's replies name two different games")
                title = reading.title
                values.update(reading.values)
                achievements |= reading.achievements
    extra = [r for r in mine if r.endpoint not in endpoints_of(spec)]
    if extra:
        raise ReceiptError(f"{phase}: a response from an endpoint the spec does not read")
    return Reading(user, title, config, build, values, frozenset(achievements))


def judge(spec: ReceiptsSpec, baseline: Reading, final: Reading) -> tuple[JudgedMilestone, ...]:
    """The milestones earned between ``baseline`` and ``final``, failing closed on any mismatch.

    A milestone already held at baseline earns nothing. The two readings
    must agree on user, title, service config, build and the set of
    achievements; no stat may go down or vanish and no achievement may lock
    again; an achievement a milestone names must be one the provider lists.
    """
    for name, said_then, said_now in (
        ("user", baseline.user, final.user),
        ("title", baseline.title, final.title),
        ("service config", baseline.config, final.config),
        ("build", baseline.build, final.build),
    ):
        if said_then != said_now:
            raise ReceiptError(f"the baseline and final readings disagree on the {name}")
    if baseline.achievements != final.achievements:
        raise ReceiptError("the baseline and final readings list different achievements")
    for key, before in baseline.values.items():
        after = final.values.get(key)
        if after is None or after < before:
            kind = "stat" if key.startswith("stat:") else "achievement"
            raise ReceiptError(
                f"the {kind} {key.split(':', 1)[1]!r} went backwards between baseline and final"
            )
    judged = []
    for milestone in spec.milestones:
        key = milestone.key
        if milestone.achievement is not None and key not in baseline.achievements:
            raise ReceiptError(
                f"the provider lists no achievement {milestone.achievement!r}; fix the spec"
            )
        then, now = baseline.values.get(key), final.values.get(key)
        limit = milestone.threshold
        earned = (then is None or then < limit) and now is not None and now >= limit
        judged.append(
            JudgedMilestone(
                id=milestone.id, key=key, threshold=limit, baseline=then, final=now, earned=earned
            )
        )
    return tuple(judged)


def trust_statement(receipts: Receipts) -> str:
    """The trust a platform-attested verdict rests on, in one plain sentence."""
    provider = PROVIDER_NAMES[receipts.spec.provider]
    return (
        f"{provider} said so at {receipts.baseline_at} (baseline) and {receipts.final_at} "
        f"(final); the game was not re-executed"
    )


def _check(check_id: Any, passed: bool, reason: str) -> CheckResult:
    return CheckResult(id=check_id, passed=passed, reason=reason)


def _pin(record: RunRecord, receipts: Receipts, contract: Contract) -> CheckResult:
    pin, spec = record.target, receipts.spec
    problems = []
    if pin.platform != spec.provider:
        problems.append(f"platform {pin.platform!r} is not the spec's provider {spec.provider!r}")
    if pin.game_id != spec.name:
        problems.append(f"record plays {pin.game_id!r}, the spec is {spec.name!r}")
    if pin.build_digest != receipts_build_digest(spec, receipts.played_digest):
        problems.append("build digest is not the digest of the spec and the played build")
    if pin.contract_hash != receipts_contract(spec).hash or contract.hash != pin.contract_hash:
        problems.append("contract hash is not the hash of the spec's milestones")
    if record.milestones_total != len(spec.milestones):
        problems.append(
            f"record says {record.milestones_total} milestones, the spec has {len(spec.milestones)}"
        )
    if record.milestones_identity not in (None, 0):
        problems.append("a receipts record has no identity milestones")
    if problems:
        return _check("target-pinned", False, "; ".join(problems))
    return _check("target-pinned", True, f"{spec.provider} title {spec.title_id} ({spec.name})")


class ReceiptsVerifier:
    """Platform-attested verification: the milestones recomputed from the pinned responses."""

    mode = VerificationMode.PLATFORM_ATTESTED

    def admit(self, record: RunRecord, contract: Contract) -> Admission:
        """The pin against the record's own spec; a receipts record declares this mode only."""
        receipts = record.receipts
        if receipts is None:
            missing = _check("target-pinned", False, "a platform-attested record without receipts")
            return Admission(pin=missing, modes=(self.mode,))
        return Admission(pin=_pin(record, receipts, contract), modes=(self.mode,))

    def reproduce(self, record: RunRecord, contract: Contract) -> Reproduction:
        """Check every body against its digest, then judge baseline against final again."""
        receipts = record.receipts
        if receipts is None:  # admit() refused it already
            return Reproduction(None, failure="the record has no receipts")
        trust = trust_statement(receipts)
        spec, user, responses = receipts.spec, receipts.user, receipts.responses
        broken = [f"{r.phase} {r.endpoint} page {r.page}" for r in responses if not r.intact]
        if broken:
            reason = f"pinned responses do not match their digests: {', '.join(broken)}"
            return Reproduction(
                None,
                failure="not recomputed: a pinned response was altered",
                checks=(_check("receipts-intact", False, reason),),
            )
        try:
            baseline = reading_of(spec, user, responses, "baseline")
            final = reading_of(spec, user, responses, "final")
            judged = judge(spec, baseline, final)
            check_timeline(record, receipts)
        except PlayproofError as exc:
            return Reproduction(
                None,
                failure="not recomputed: the pinned responses fail the spec",
                checks=(_check("receipts-intact", False, f"the pinned responses fail: {exc}"),),
            )
        if judged != receipts.judged:
            reason = "the recorded judgement differs from the one the pinned responses give"
            intact = _check("receipts-intact", False, reason)
        else:
            held = [j.id for j in judged if not j.earned and _held(j)]
            note = f"; held before the run, so not earned: {', '.join(held)}" if held else ""
            intact = _check(
                "receipts-intact",
                True,
                f"{len(responses)} pinned responses match their digests and the judgement{note}",
            )
        turn = len(record.decisions)
        earned = tuple(PassedMilestone(j.id, turn) for j in judged if j.earned)
        over_at = turn if record.game_over else None  # the played game is not re-executed
        return Reproduction(
            ReplayResult(verified=earned, turns=turn, over_at=over_at),
            checks=(intact,),
            trust=trust,
            source="the pinned receipts",
        )


def _held(judged: JudgedMilestone) -> bool:
    return judged.baseline is not None and judged.baseline >= judged.threshold


def receipts_verifier(record: RunRecord, inputs: VerificationInputs) -> ReceiptsVerifier | str:
    """The platform-attested verifier: it needs nothing but the record itself."""
    return ReceiptsVerifier()


def attest_receipts(data: Any) -> VerificationReport:
    """Verify a platform-attested record (model or raw JSON) from the responses it pins.

    The contract is the one the record's own spec stands for; the pin check
    holds the record's contract hash and build digest to it. Never raises on
    hostile input.
    """
    record, why = parse_record(data)
    if record is None or record.receipts is None:
        reason = why if record is None else "a platform-attested record without receipts"
        return VerificationReport.from_checks([_check("record-well-formed", False, reason)])
    return verify_by_mode(record, receipts_contract(record.receipts.spec), VerificationInputs())
