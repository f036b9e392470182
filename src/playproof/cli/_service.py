"""Service commands: ``serve``, ``db upgrade``, ``service owner|token|key`` and ``submit``.

Importing this module registers them on :data:`playproof.cli._app.app`. The
service itself needs the ``server`` extra; it is imported only when a service
command runs, so the rest of the CLI works without it.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import httpx
import typer

from playproof._bounded import ACCEPTED_ENCODINGS, decode_content
from playproof.cli._app import (
    EXIT_REJECTED,
    Executor,
    ExecutorName,
    RayAddress,
    _emit,
    _wants_json,
    app,
    say_retried,
)
from playproof.cli._files import read_document
from playproof.cli._options import ContractFile
from playproof.cli._output import console, line, styled
from playproof.core.canonical import parse_json
from playproof.core.report import CHECK_IDS
from playproof.errors import FormatError, RunError, ServiceError
from playproof.sign import VerifyingKey

if TYPE_CHECKING:
    from playproof.service.settings import ServiceSettings

__all__ = ["db_app", "service_app"]

db_app = typer.Typer(help="The service database.", no_args_is_help=True)
service_app = typer.Typer(help="Administer the proof service.", no_args_is_help=True)
owner_app = typer.Typer(help="Owners who may upload.", no_args_is_help=True)
token_app = typer.Typer(help="Owners' API tokens.", no_args_is_help=True)
key_app = typer.Typer(help="Owners' signer keys.", no_args_is_help=True)
challenge_app = typer.Typer(
    help="Challenges: a target, seeds, a budget, a window.", no_args_is_help=True
)
app.add_typer(db_app, name="db")
app.add_typer(service_app, name="service")
service_app.add_typer(owner_app, name="owner")
service_app.add_typer(token_app, name="token")
service_app.add_typer(key_app, name="key")
service_app.add_typer(challenge_app, name="challenge")

HTTP_TIMEOUT_S = 30.0
"""How long one request to the service may take."""
DEFAULT_MAX_CONNECTIONS = 512
"""Connections ``serve`` holds at once by default (long polls included): well under the usual
1,024 open files, so a flood of connections is turned away before the database's are starved."""
MAX_RESPONSE_BYTES = 1024 * 1024
"""The largest service answer the client reads."""
DEFAULT_WAIT_S = 600.0
"""How long ``submit`` waits for the server's verdict by default."""
POLL_INTERVAL_S = 0.5
"""The pause between status requests when a server answers a long poll at once."""
LONG_POLL_S = 10.0
"""How long each status request asks the server to hold it for the verdict (``?wait=``)."""

DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        help="SQLAlchemy URL (default: sqlite under .playproof/service.db).",
        show_default=False,
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def _settings(database_url: str | None, **extra: Any) -> ServiceSettings:
    try:
        from playproof.service.settings import ServiceSettings, default_database_url
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ServiceError(
            f"the proof service needs the server extra: pip install 'playproof[server]' ({exc})"
        ) from exc
    return ServiceSettings(database_url=database_url or default_database_url(), **extra)


def _admin_sessions(database_url: str | None) -> Any:
    from playproof.service.app import prepare_database
    from playproof.service.db import make_engine, session_factory

    settings = _settings(database_url)
    prepare_database(settings)
    return session_factory(make_engine(settings.database_url))


@app.command()
def serve(
    database_url: DatabaseUrl = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=1, max=65535)] = 8400,
    replay_workers: Annotated[
        int, typer.Option(help="Processes replaying uploads.", min=1, max=64)
    ] = 1,
    log_key: Annotated[
        Path,
        typer.Option(help="The transparency log's signing key (created on first start)."),
    ] = Path(".playproof/service-log.key"),
    executor: Executor = ExecutorName.LOCAL,
    ray_address: RayAddress = None,
    forwarded_allow_ips: Annotated[
        str,
        typer.Option(
            help="Comma-separated addresses of the TLS proxies whose X-Forwarded-Proto and "
            "X-Forwarded-For are believed ('*' for any); the web session cookie is Secure "
            "when the request came over HTTPS."
        ),
    ] = "127.0.0.1",
    max_connections: Annotated[
        int,
        typer.Option(
            help="Open connections (and requests under way) the server holds at once; "
            "past it, new requests are answered 503 at once.",
            min=1,
            max=100_000,
        ),
    ] = DEFAULT_MAX_CONNECTIONS,
) -> None:
    """Run the proof service (an embedded SQLite database is created and migrated).

    Server-side replays run on a local pool of --replay-workers processes, or
    with --executor ray as tasks on a Ray cluster (--ray-address HOST:PORT
    joins one; without it a Ray is started on this machine).
    """
    from playproof.exec import check_executor, open_executor

    if executor == ExecutorName.SERIAL:
        raise RunError("serve replays on --executor local or ray (serial would hold requests up)")
    check_executor(executor, None, ray_address)
    settings = _settings(database_url, replay_workers=replay_workers, log_key_file=log_key)
    import uvicorn

    from playproof.service.app import create_app, prepare_database

    prepare_database(settings)

    def served(asgi: Any) -> None:
        uvicorn.run(
            asgi,
            host=host,
            port=port,
            log_level="info",
            proxy_headers=True,
            forwarded_allow_ips=forwarded_allow_ips,
            limit_concurrency=max_connections,
        )

    if executor == ExecutorName.LOCAL:
        served(create_app(settings))
        return

    replays, _ = open_executor("ray", address=ray_address, on_retry=say_retried)
    try:
        served(create_app(settings, executor=replays))
    finally:
        # Replays still under way stay pending in the database and run at the next start.
        replays.shutdown(wait=False, cancel_futures=True)


@db_app.command("upgrade")
def db_upgrade(database_url: DatabaseUrl = None) -> None:
    """Apply the database migrations up to the newest."""
    from playproof.service.db import current_revision, make_engine, upgrade

    settings = _settings(database_url)
    engine = make_engine(settings.database_url)
    try:
        upgrade(engine)
        console.print(line("database at revision ", styled(current_revision(engine), "bold")))
    finally:
        engine.dispose()


@owner_app.command("add")
def owner_add(
    name: Annotated[str, typer.Argument(help="Owner name (letters, digits, . _ -).")],
    contact: Annotated[
        str | None, typer.Option(help="Private contact (never served).", show_default=False)
    ] = None,
    admin: Annotated[
        bool, typer.Option("--admin", help="May add challenges through the API.")
    ] = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Add an owner who may upload signed records."""
    from playproof.service.owners.services import add_owner

    with _admin_sessions(database_url)() as session:
        owner = add_owner(session, name, contact)
        owner.admin = admin
        session.commit()
        console.print(line("owner ", styled(owner.name, "bold"), " added"))


@token_app.command("create")
def token_create(
    owner: Annotated[str, typer.Argument(help="Owner name.")],
    database_url: DatabaseUrl = None,
) -> None:
    """Create an API token for OWNER; it is printed once and only its SHA-256 is kept."""
    from playproof.service.owners.services import create_token, find_owner

    with _admin_sessions(database_url)() as session:
        token = create_token(session, find_owner(session, owner))
        session.commit()
    typer.echo(token)


@token_app.command("revoke")
def token_revoke(
    owner: Annotated[str, typer.Argument(help="Owner name.")],
    database_url: DatabaseUrl = None,
) -> None:
    """Revoke every API token of OWNER: the API refuses them and their web sessions end."""
    from playproof.service.owners.services import find_owner, revoke_tokens

    with _admin_sessions(database_url)() as session:
        count = revoke_tokens(session, find_owner(session, owner))
        session.commit()
    console.print(line(f"{count} token(s) of ", styled(owner, "bold"), " revoked"))


@key_app.command("add")
def key_add(
    owner: Annotated[str, typer.Argument(help="Owner name.")],
    public_key: Annotated[Path, typer.Argument(help="The signer's public key (PEM).")],
    database_url: DatabaseUrl = None,
) -> None:
    """Register a signer's public key to OWNER: records it signed are theirs."""
    from playproof.service.owners.services import add_key, find_owner

    key = VerifyingKey.load(public_key)
    with _admin_sessions(database_url)() as session:
        add_key(session, find_owner(session, owner), key)
        session.commit()
    console.print(line("key ", styled(key.key_id[:16], "bold"), f"... registered to {owner}"))


MAX_SEEDS_TEXT = 64 * 1024
"""The longest --seeds list the command reads."""


def _parse_seeds(text: str) -> list[int]:
    """Seeds as ``1,2,5-9`` (ranges included); ServiceError for anything else."""
    if len(text) > MAX_SEEDS_TEXT:
        raise ServiceError(f"--seeds is longer than {MAX_SEEDS_TEXT} characters")
    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        low, dash, high = part.partition("-")
        try:
            if dash:
                first, last = int(low), int(high)
                if last < first or last - first > 100_000:
                    raise ValueError(part)
                seeds.extend(range(first, last + 1))
            else:
                seeds.append(int(part))
        except ValueError:
            raise ServiceError(
                f"--seeds: {part[:40]!r} is not a seed or a range like 5-9"
            ) from None
    return seeds


def _moment(text: str, option: str) -> Any:
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ServiceError(
            f"{option} {text[:40]!r} is not an ISO 8601 time such as 2027-01-01T00:00:00Z"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@challenge_app.command("add")
def challenge_add(
    target: Annotated[str, typer.Argument(help="Packaged target, e.g. native/2048.")],
    seeds: Annotated[str, typer.Option(help="Seed set: 1,2,5-9.")],
    budget: Annotated[float, typer.Option(help="Budget in USD a run may declare at most.")],
    opens: Annotated[str, typer.Option(help="Window start (ISO 8601; UTC if no zone).")],
    closes: Annotated[str, typer.Option(help="Window end (ISO 8601; UTC if no zone).")],
    database_url: DatabaseUrl = None,
    json_output: JsonFlag = False,
) -> None:
    """Open a challenge on TARGET: runs on its seeds, within its budget, uploaded in its window."""
    from playproof.service.deployments.services import registry_targets, sync_targets
    from playproof.service.leaderboards.services import add_challenge

    with _admin_sessions(database_url)() as session:
        sync_targets(session, registry_targets())
        made = add_challenge(
            session,
            target,
            _parse_seeds(seeds),
            budget,
            _moment(opens, "--opens"),
            _moment(closes, "--closes"),
        )
        challenge_id = made.id
    if _wants_json(json_output):
        _emit(
            {
                "id": challenge_id,
                "leaderboard_url": f"/api/v1/challenges/{challenge_id}/leaderboard",
            }
        )
    else:
        console.print(line("challenge ", styled(challenge_id, "bold"), f" on {target} added"))


async def _exchange(
    method: str, url: str, within_s: float, options: dict[str, Any]
) -> tuple[int, str | None, bytes]:
    """One request: its status, content coding and raw body (at most MAX_RESPONSE_BYTES).

    The whole exchange (connecting, sending, the status line and headers, the
    body) must end within ``within_s``: a server that drips its answer a byte
    at a time, each byte inside the read timeout, is cut off at the bound. A
    client is made for each request, so redirects are never followed and no
    cookie a server sets is ever sent back.
    """
    async with (
        asyncio.timeout(within_s),
        httpx.AsyncClient(
            timeout=within_s,
            follow_redirects=False,
            headers={"accept-encoding": ACCEPTED_ENCODINGS},
        ) as client,
        client.stream(method, url, **options) as response,
    ):
        body = bytearray()
        # Raw bytes, decoded afterwards within the same cap: httpx would inflate a whole
        # compressed chunk however far it expands before the size could be checked.
        async for chunk in response.aiter_raw():
            body += chunk
            if len(body) > MAX_RESPONSE_BYTES:
                raise ServiceError(f"the service answered with over {MAX_RESPONSE_BYTES} bytes")
        return response.status_code, response.headers.get("content-encoding"), bytes(body)


def _request(
    method: str, url: str, *, timeout: float | None = None, **options: Any
) -> tuple[int, Any]:
    """The status and JSON of one request, all of it within ``timeout`` (HTTP_TIMEOUT_S) s."""
    within = HTTP_TIMEOUT_S if timeout is None else timeout
    try:
        status, coding, body = asyncio.run(_exchange(method, url, within, options))
    except TimeoutError:
        raise ServiceError(f"the service took over {within:.0f} s to answer {url}") from None
    except httpx.HTTPError as exc:
        raise ServiceError(f"cannot reach the service at {url}: {exc}") from exc
    decoded = decode_content(body, coding, MAX_RESPONSE_BYTES, ServiceError, "the answer")
    try:
        return status, parse_json(decoded, limit=MAX_RESPONSE_BYTES, what="service answer")
    except FormatError as exc:
        raise ServiceError(f"the service answered {status} without JSON") from exc


_RUN_STATUSES = ("pending", "verified", "rejected", "failed")
_ERROR_KIND_CHARS = 80
"""The most of a failed replay's ``error_kind`` (a class name) an error message quotes."""
_QUOTED_CHARS = 300
"""The most of a refusal's detail the client prints (an answer may hold up to 1 MiB)."""


def _quoted(value: object) -> str:
    """``value`` as text, cut to _QUOTED_CHARS characters."""
    text = str(value)
    return text if len(text) <= _QUOTED_CHARS else f"{text[:_QUOTED_CHARS]}..."


_RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A run id the client puts in a status URL and on the terminal: letters, digits, ``_``, ``-``."""


def _run_status(answer: Any, url: str, run_id: str | None = None) -> dict[str, Any]:
    """``answer`` when it is a run status the service's API defines, else a ServiceError.

    The id must be a plain run id (it goes into the status URL and onto the
    terminal), and ``run_id``'s when given: a status poll answers for the run uploaded.
    """
    valid = (
        isinstance(answer, dict)
        and isinstance(answer.get("id"), str)
        and _RUN_ID.fullmatch(answer["id"]) is not None
        and (run_id is None or answer["id"] == run_id)
        and answer.get("status") in _RUN_STATUSES
        and isinstance(answer.get("proof_url", ""), str)
        and isinstance(answer.get("failed_checks", []), list)
        and all(isinstance(check, str) for check in answer.get("failed_checks", []))
    )
    if not valid:
        raise ServiceError(f"the service at {url} did not answer with a run status")
    return dict(answer)


def _refused_check(answer: Any) -> str | None:
    """The verifier check a refusal names (``.../problems/signature-valid``), if any."""
    kind = str(answer.get("type", "")) if isinstance(answer, dict) else ""
    check = kind.rsplit("/", 1)[-1]
    return check if check in CHECK_IDS else None


@app.command()
def submit(
    record: Annotated[Path, typer.Argument(help="Signed record (DSSE envelope JSON).")],
    server: Annotated[str, typer.Option("--server", help="Service URL, e.g. http://host:8400.")],
    token_env: Annotated[
        str, typer.Option("--token-env", help="Environment variable holding the API token.")
    ] = "PLAYPROOF_TOKEN",
    wait: Annotated[
        float, typer.Option(help="Seconds to wait for the verdict.", min=1, max=86400)
    ] = DEFAULT_WAIT_S,
    json_output: JsonFlag = False,
    transcript: Annotated[
        Path | None,
        typer.Option(
            help="trusted-recorder: the signed transcript (default: RECORD.transcript.json "
            "beside the record, when there is one)."
        ),
    ] = None,
    contract: ContractFile = None,
) -> None:
    """Upload a signed record and wait for the server's verdict (exit 0 verified, 1 rejected).

    A trusted-recorder record goes with its transcript (and, for a desktop
    target, --contract) as one run upload.
    """
    from playproof.cli._desktop import read_transcript, upload_body
    from playproof.targets import read_contract

    token = os.environ.get(token_env, "").strip()
    if not token:
        raise ServiceError(f"the environment variable {token_env} holds no API token")
    body, media_type = upload_body(
        read_document(record),
        read_transcript(record, transcript),
        read_contract(contract) if contract is not None else None,
    )
    base = server.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ServiceError(f"--server {server!r} is not an http(s) URL")
    try:
        httpx.URL(f"{base}/api/v1/runs")
    except httpx.InvalidURL as exc:
        raise ServiceError(f"--server {server[:200]!r} is not a usable URL: {exc}") from None
    headers = {"Authorization": f"Bearer {token}", "Content-Type": media_type}
    status, answer = _request("POST", f"{base}/api/v1/runs", content=body, headers=headers)
    if status not in (200, 202) or not isinstance(answer, dict) or "id" not in answer:
        detail = answer.get("detail") if isinstance(answer, dict) else None
        message = f"the service refused the upload ({status}): {_quoted(detail or answer)}"
        if _refused_check(answer) is not None:
            if _wants_json(json_output):
                _emit({"status": "refused", "http_status": status, "problem": answer})
            else:
                console.print(line(styled("refused: ", "red"), _quoted(detail)))
            raise typer.Exit(EXIT_REJECTED)
        raise ServiceError(message)
    answer = _run_status(answer, f"{base}/api/v1/runs")
    answer = _await_verdict(base, answer, wait, quiet=_wants_json(json_output))
    if answer["status"] == "failed":
        kind = answer.get("error_kind")
        why = f" ({kind[:_ERROR_KIND_CHARS]})" if isinstance(kind, str) and kind else ""
        raise ServiceError(
            f"the server could not replay run {answer['id']}{why}, so it has no verdict; "
            f"its status is at {base}/api/v1/runs/{answer['id']}"
        )
    if _wants_json(json_output):
        _emit(answer)
    else:
        shown = styled(answer["status"], "green" if answer["status"] == "verified" else "red")
        console.print(line(f"run {answer['id']}: ", shown))
        for failed in answer.get("failed_checks", []):
            console.print(line("  failed ", str(failed)))
        console.print(line("proof: ", f"{base}{answer.get('proof_url', '')}"), soft_wrap=True)
    if answer["status"] != "verified":
        raise typer.Exit(EXIT_REJECTED)


def _await_verdict(
    base: str, answer: dict[str, Any], wait: float, *, quiet: bool
) -> dict[str, Any]:
    """Ask for the run's status until it is not pending, within ``wait`` seconds.

    Each request is a long poll (``?wait=``): the server answers when the
    verdict is stored, so the verdict shows without a polling delay.
    """
    from contextlib import nullcontext

    from rich.status import Status

    deadline = time.monotonic() + wait
    started = time.monotonic()
    run_id = str(answer["id"])
    url = f"{base}/api/v1/runs/{run_id}"
    spinner = Status("waiting for the server's replay", console=console)
    with nullcontext() if quiet else spinner:
        while answer.get("status") == "pending":
            elapsed = time.monotonic() - started
            if not quiet:
                spinner.update(line(f"run {answer['id']} pending: server replay, {elapsed:.0f} s"))
            if time.monotonic() > deadline:
                raise ServiceError(
                    f"run {answer['id']} is still pending after {wait:.0f} s; "
                    f"its status is at {url}"
                )
            # A long poll: the server answers as soon as the verdict is stored.
            hold = max(0.0, min(LONG_POLL_S, deadline - time.monotonic()))
            asked = time.monotonic()
            status, answer = _request(
                "GET", url, params={"wait": f"{hold:.1f}"}, timeout=hold + HTTP_TIMEOUT_S
            )
            if status != 200:
                raise ServiceError(f"the service answered {status} for {url}")
            answer = _run_status(answer, url, run_id)
            if answer.get("status") == "pending" and time.monotonic() - asked < POLL_INTERVAL_S:
                time.sleep(POLL_INTERVAL_S)  # a server that does not hold polls: do not flood it
    return answer
