"""The web pages of the proof service: thin routes over the services and the templates."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import select
from sqlalchemy.orm import Session, defer
from starlette.concurrency import run_in_threadpool

from playproof.core.game import VerificationMode
from playproof.core.record import RunRecord
from playproof.errors import FormatError, PlayproofError
from playproof.service.checks import GroupResult
from playproof.service.deployments.labels import TrustLabel
from playproof.service.deployments.models import Deployment
from playproof.service.deployments.services import get_target, require_read
from playproof.service.grades.services import get_grade
from playproof.service.leaderboards.services import (
    DEFAULT_PAGE,
    MAX_OFFSET,
    SORTS,
    challenge_leaderboard,
    challenge_seeds,
    get_challenge,
    leaderboard,
    list_challenges,
)
from playproof.service.problems import Problem, answer_problem
from playproof.service.proofs.services import proof_document
from playproof.service.runs.models import Run, RunStatus
from playproof.service.runs.routes import read_bounded_body
from playproof.service.runs.services import get_run, stored_report
from playproof.service.state import read_session, service_state
from playproof.service.web.frames import (
    FrameIndex,
    FramesBusy,
    FrameUnavailable,
    cached_events,
    ensure_frames,
    is_policy_bound,
    packaged_target,
    read_frame,
)
from playproof.service.web.grades import CASES_PAGE, GRADES_PAGE, grade_list, grade_view
from playproof.service.web.policy import PolicyView, policy_view
from playproof.service.web.rendering import PAGE_CACHE, WebState, render, web_state
from playproof.service.web.signin import CSRF_COOKIE, CSRF_FIELD, SESSION_COOKIE, Viewer
from playproof.service.web.views import (
    DECISIONS_PAGE,
    board_view,
    decisions_shown,
    run_view,
    target_views,
)

__all__ = ["MAX_FORM_BYTES", "router"]

router = APIRouter(include_in_schema=False)

MAX_FORM_BYTES = 4096
"""The largest web form body (a sign-in form is a few hundred bytes)."""
MAX_OWNER_RUNS = 500
"""The most runs an owner's page lists (newest first)."""

ReadSession = Annotated[Session, Depends(read_session)]
PageQuery = Annotated[int, Query(ge=1, le=MAX_OFFSET // DEFAULT_PAGE)]
MAX_CASE_PAGES = -(-1_000_000 // CASES_PAGE)
"""The last page of cases a grade can have (``max_grade_cases`` is at most 1,000,000)."""
SortQuery = Annotated[str, Query(pattern="^(" + "|".join(SORTS) + ")$")]
"""A board's order: one of the service's whole-board sorts (anything else is a 422 page)."""


def current_viewer(request: Request, session: ReadSession) -> Viewer | None:
    """The signed-in owner of this request, if any."""
    return web_state(request).keys.viewer(session, request.cookies.get(SESSION_COOKIE))


ViewerDep = Annotated[Viewer | None, Depends(current_viewer)]


def _readable_run(session: Session, run_id: str, viewer: Viewer | None) -> Run:
    run = get_run(session, run_id)
    require_read(run.trust_label, run.owner_id, viewer.id if viewer else None, f"run {run.id}")
    return run


def _download_headers(run: Run, filename: str) -> dict[str, str]:
    """A download's headers: an owner-only run's file is never kept by a cache."""
    headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
    if run.trust_label != TrustLabel.CANONICAL.value:
        headers["Cache-Control"] = PAGE_CACHE
    return headers


@router.get("/", response_class=HTMLResponse)
def home() -> Response:
    """The front page is the list of targets."""
    return RedirectResponse("/targets", status_code=303)


@router.get("/targets", response_class=HTMLResponse)
def targets_page(request: Request, session: ReadSession, viewer: ViewerDep) -> Response:
    """Every packaged target: platform, build, calibration verdict, links."""
    return render(request, "targets.html", viewer, targets=target_views(session))


@router.get("/targets/{name:path}/leaderboard", response_class=HTMLResponse)
def leaderboard_page(
    name: str,
    request: Request,
    session: ReadSession,
    viewer: ViewerDep,
    page: PageQuery = 1,
    sort: SortQuery = "rank",
) -> Response:
    """The public leaderboard of one target, a page at a time, sorted over the whole board."""
    board = leaderboard(
        session, name, limit=DEFAULT_PAGE, offset=(page - 1) * DEFAULT_PAGE, sort=sort
    )
    return render(
        request,
        "leaderboard.html",
        viewer,
        board=board_view(session, board, sort),
        challenge=None,
        challenges=list_challenges(session, board.target),
    )


@router.get("/challenges/{challenge_id}", response_class=HTMLResponse)
def challenge_page(
    challenge_id: str,
    request: Request,
    session: ReadSession,
    viewer: ViewerDep,
    page: PageQuery = 1,
    sort: SortQuery = "rank",
) -> Response:
    """The leaderboard of one challenge: its target's runs that meet its terms."""
    challenge = get_challenge(session, challenge_id)
    board = challenge_leaderboard(
        session, challenge.id, limit=DEFAULT_PAGE, offset=(page - 1) * DEFAULT_PAGE, sort=sort
    )
    return render(
        request,
        "leaderboard.html",
        viewer,
        board=board_view(session, board, sort),
        challenge=challenge,
        seeds=challenge_seeds(challenge),
        challenges=[],
    )


@router.get("/grades", response_class=HTMLResponse)
def grades_page(
    request: Request,
    session: ReadSession,
    viewer: ViewerDep,
    page: Annotated[int, Query(ge=1, le=MAX_OFFSET // GRADES_PAGE)] = 1,
) -> Response:
    """Every uploaded corpus grade, newest first (grades are public, as in the API)."""
    lines, total, pages = grade_list(session, page)
    return render(request, "grades.html", viewer, grades=lines, total=total, page=page, pages=pages)


@router.get("/grades/{grade_id}", response_class=HTMLResponse)
def grade_page(
    grade_id: str,
    request: Request,
    session: ReadSession,
    viewer: ViewerDep,
    page: Annotated[int, Query(ge=1, le=MAX_CASE_PAGES)] = 1,
) -> Response:
    """One corpus grade: a page of its cases, the passes per suite and its history."""
    grade = get_grade(session, grade_id)
    view = grade_view(session, grade, page)
    if view is None:
        raise Problem(409, "unreadable-grade", f"grade {grade.id} holds no readable grade record")
    return render(request, "grade.html", viewer, view=view)


@router.get("/targets/{name:path}/contract.json")
def contract_download(name: str, session: ReadSession) -> Response:
    """The packaged contract of a target, as JSON."""
    from playproof.targets import get_target as packaged

    known = get_target(session, name)
    try:
        contract = packaged(known.name).contract
    except PlayproofError as exc:
        raise Problem(404, "unknown-target", f"target {known.name} is not installed here") from exc
    body = json.dumps(contract.model_dump(mode="json", by_alias=True), indent=2)
    return Response(body, media_type="application/json")


def _frames_cache(request: Request) -> Path:
    return web_state(request).frames_cache


MAX_DECISION_PAGES = -(-10_000_000 // DECISIONS_PAGE)
"""The last page of decisions a run page takes (the replay viewer's turns go to 10,000,000)."""


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(
    run_id: str,
    request: Request,
    session: ReadSession,
    viewer: ViewerDep,
    page: Annotated[int, Query(ge=1, le=MAX_DECISION_PAGES)] = 1,
) -> Response:
    """The proof card of one run, with the page ``page`` of its decisions (and actions)."""
    run = _readable_run(session, run_id, viewer)
    record = web_state(request).records.record(run)
    if record is None:
        raise Problem(409, "unreadable-run", f"run {run.id} holds no readable record")
    shown = decisions_shown(len(record.decisions), page)  # a 404 past the last page
    proof = proof_document(session, run, service_state(request).log_key, record=record)
    cache = _frames_cache(request)
    deployed = session.get(Deployment, run.deployment_id) if run.deployment_id else None
    envelope = deployed.policy_envelope if deployed is not None else None
    policy = _policy_section(cache, record, run.record_digest, proof.cats, shown, envelope)
    view = run_view(proof, record, cache, policy, page)
    return render(request, "run.html", viewer, view=view)


def _policy_section(
    cache: Path,
    record: RunRecord,
    record_digest: str,
    cats: list[GroupResult],
    shown: range,
    deployed: str | None = None,
) -> PolicyView | None:
    """The policy section of a run of a policy-bound target, from the server's replay.

    The replay (the viewer's, cached with its frames) runs on the first
    visit; policy-bound runs are short (the envelope caps their actions).
    ``deployed`` is the envelope of the run's deployment (JSON), which its
    groups were judged against, when it has one of its own.
    """
    target = packaged_target(record)
    if target is None or not is_policy_bound(target):
        return None
    try:
        ensure_frames(cache, record, record_digest, need_events=True)
    except FrameUnavailable:
        return policy_view(target, record.inputs, None, cats, shown, deployed)
    events = cached_events(cache, record_digest)
    return policy_view(target, record.inputs, events, cats, shown, deployed)


@router.get("/runs/{run_id}/record.json")
def record_download(run_id: str, session: ReadSession, viewer: ViewerDep) -> Response:
    """The signed record (the DSSE envelope) exactly as the server replayed it."""
    run = _readable_run(session, run_id, viewer)
    return Response(
        run.envelope,
        media_type="application/json",
        headers=_download_headers(run, f"run-{run.id}.signed.json"),
    )


@router.get("/runs/{run_id}/proof.json")
def proof_download(
    run_id: str, request: Request, session: ReadSession, viewer: ViewerDep
) -> Response:
    """The public proof document, as a file (from the pages' parsed record)."""
    run = _readable_run(session, run_id, viewer)
    record = web_state(request).records.record(run)
    if record is None:
        raise Problem(409, "unreadable-run", f"run {run.id} holds no readable record")
    proof = proof_document(session, run, service_state(request).log_key, record=record)
    return Response(
        proof.model_dump_json(indent=2),
        media_type="application/json",
        headers=_download_headers(run, f"run-{run.id}.proof.json"),
    )


async def _replayed_record(request: Request, run: Run) -> RunRecord:
    """The run's record, or a 409 when it is unreadable or was not verified by replay.

    Parsed on a worker thread (a record near the upload limit takes a third of a
    second), at most once while it stays in the pages' record cache.
    """
    record = await run_in_threadpool(web_state(request).records.record, run)
    if record is None:
        raise Problem(409, "unreadable-run", f"run {run.id} holds no readable record")
    mode = record.target.verification_mode
    if mode is not VerificationMode.REPLAY:
        raise Problem(
            409,
            "no-replay-frames",
            f"run {run.id} was verified in {mode.value} mode, without re-executing the game: "
            "it has no replayed frames; its run page says what the verdict trusted",
        )
    return record


def _why_not_drawn(run: Run) -> str | None:
    """Why the viewer draws no frames for this run (None: it draws them)."""
    if run.status == RunStatus.VERIFIED.value:
        return None
    if run.status == RunStatus.PENDING.value:
        return (
            f"run {run.id} is still being verified: the viewer draws frames only for verified "
            "runs; come back once the run has its verdict"
        )
    return (
        f"run {run.id} was {run.status}, not verified: the viewer draws frames only for verified "
        "runs; the record can be replayed locally with playproof verify"
    )


def _failed_checks(run: Run) -> list[str]:
    """The verdict's failed checks, with the verifier's reasons (where replay parted)."""
    report = stored_report(run)
    if report is None:
        return []
    return [f"{check.id}: {check.reason}" for check in report.checks if not check.passed]


async def _refusal(request: Request, problem: Problem) -> Response:
    """The app's answer to ``problem``, carrying its headers (the web error page drops them)."""
    answer = await answer_problem(request, problem)
    answer.headers.update(problem.headers)
    return answer


async def _frames_of(request: Request, session: Session, run: Run) -> Any:
    record = await _replayed_record(request, run)
    why = _why_not_drawn(run)
    if why is not None:
        raise Problem(409, "no-replay-frames", why)
    cache = _frames_cache(request)
    try:
        return record, await run_in_threadpool(ensure_frames, cache, record, run.record_digest)
    except FramesBusy as exc:
        raise Problem(
            503, "viewer-busy", str(exc), headers={"Retry-After": str(exc.retry_after)}
        ) from exc
    except FrameUnavailable as exc:
        raise Problem(409, "no-replay-frames", str(exc)) from exc


def _cached_frame(request: Request, index: FrameIndex, turn: int) -> bytes:
    try:
        return read_frame(_frames_cache(request), index, turn)
    except FormatError as exc:  # deleted from the cache (the disk bound) since it was found
        raise Problem(
            503,
            "viewer-busy",
            "this run's frames were just deleted from the cache: load the page again to draw them",
            headers={"Retry-After": "1"},
        ) from exc


@router.get("/runs/{run_id}/replay", response_class=HTMLResponse)
async def replay_page(
    run_id: str,
    request: Request,
    session: ReadSession,
    viewer: ViewerDep,
    turn: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> Response:
    """The replay viewer: frames the server regenerated, one turn at a time.

    A run that is not verified gets the page without frames: why, and the
    verdict's failed checks (drawing a rejected run's frames is not paid for).
    """
    run = await run_in_threadpool(_readable_run, session, run_id, viewer)
    why = _why_not_drawn(run)
    if why is not None:
        failed = await run_in_threadpool(_failed_checks, run)
        return render(
            request,
            "replay.html",
            viewer,
            run=run,
            record=await _replayed_record(request, run),
            index=None,
            not_drawn=why,
            failed=failed,
        )
    try:
        record, index = await _frames_of(request, session, run)
        turn = min(turn, index.turns)
        text = None
        if index.kind == "text":
            text = _cached_frame(request, index, turn).decode("utf-8", "replace")
    except Problem as problem:
        if not problem.headers:
            raise
        return await _refusal(request, problem)
    decision = record.decisions[turn - 1] if turn >= 1 else None
    reached = [m for m in index.verified if m.turn == turn]
    return render(
        request,
        "replay.html",
        viewer,
        run=run,
        record=record,
        index=index,
        turn=turn,
        text=text,
        decision=decision,
        reached=reached,
        marked_turns={m.turn: m.id for m in index.verified},
    )


@router.get("/runs/{run_id}/frames/{turn}")
async def frame_file(
    run_id: str, turn: int, request: Request, session: ReadSession, viewer: ViewerDep
) -> Response:
    """One regenerated frame: a PNG for emulator targets, text for text games."""
    run = await run_in_threadpool(_readable_run, session, run_id, viewer)
    try:
        _record, index = await _frames_of(request, session, run)
        if not 0 <= turn <= index.turns:
            raise Problem(404, "no-such-frame", f"run {run.id} has frames 0 to {index.turns}")
        data = _cached_frame(request, index, turn)
    except Problem as problem:
        if not problem.headers:
            raise
        return await _refusal(request, problem)
    # A public run's frames are kept an hour; an owner-only run's are kept by no
    # cache, so none is shown from the browser's cache after its owner signs out.
    public = run.trust_label == TrustLabel.CANONICAL.value
    return Response(
        data,
        media_type=index.media_type,
        headers={"Cache-Control": "private, max-age=3600" if public else PAGE_CACHE},
    )


@router.get("/signin", response_class=HTMLResponse)
def signin_page(
    request: Request, viewer: ViewerDep, next: Annotated[str, Query(max_length=200)] = "/me"
) -> Response:
    """The sign-in form: an owner pastes an API token."""
    return render(request, "signin.html", viewer, next=_safe_next(next), failed=False)


def _safe_next(target: str) -> str:
    # Only a path on this site: never an absolute URL another site could use.
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/me"
    return target


async def _form(request: Request) -> dict[str, str]:
    body = await read_bounded_body(request, MAX_FORM_BYTES)
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=8)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Problem(400, "bad-form", "the form is not URL-encoded UTF-8") from exc
    return {name: values[0] for name, values in fields.items() if values}


def _check_csrf(request: Request, form: dict[str, str]) -> None:
    keys = web_state(request).keys
    if not keys.csrf_matches(form.get(CSRF_FIELD), request.cookies.get(CSRF_COOKIE)):
        raise Problem(
            403,
            "csrf",
            "the form was not sent from this site's page (its CSRF token is missing or wrong): "
            "reload the page and send it again",
        )


@router.post("/signin", response_class=HTMLResponse)
async def signin(request: Request) -> Response:
    """Check the CSRF token and the API token; open a session."""
    form = await _form(request)
    _check_csrf(request, form)
    state = web_state(request)
    with_session: Callable[[], Any] = lambda: _sign_in(request, state, form.get("token", ""))  # noqa: E731
    signed = await run_in_threadpool(with_session)
    next_path = _safe_next(form.get("next", "/me"))
    if signed is None:
        response = render(request, "signin.html", None, next=next_path, failed=True)
        response.status_code = 401
        return response
    _viewer, cookie = signed
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        cookie,
        httponly=True,
        secure=request.url.scheme == "https",
        samesite="strict",
        path="/",
    )
    return response


def _sign_in(request: Request, state: WebState, token: str) -> Any:
    with service_state(request).sessions() as session:
        try:
            return state.keys.sign_in(session, token)
        finally:
            session.rollback()


@router.post("/signout", response_class=HTMLResponse)
async def signout(request: Request) -> Response:
    """End the session (CSRF-checked like every form)."""
    form = await _form(request)
    _check_csrf(request, form)
    response = RedirectResponse("/targets", status_code=303)
    response.delete_cookie(
        SESSION_COOKIE,
        path="/",
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return response


@router.get("/me", response_class=HTMLResponse)
def owner_page(request: Request, session: ReadSession, viewer: ViewerDep) -> Response:
    """The signed-in owner's runs, every trust label included."""
    if viewer is None:
        return RedirectResponse(f"/signin?next={quote('/me')}", status_code=303)
    runs = list(
        session.scalars(
            select(Run)
            .options(defer(Run.envelope))  # the list shows columns only
            .where(Run.owner_id == viewer.id)
            .order_by(Run.created_at.desc())
            .limit(MAX_OWNER_RUNS)
        )
    )
    return render(request, "owner.html", viewer, runs=runs)
