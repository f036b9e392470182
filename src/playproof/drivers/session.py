"""The persistent session driver: one long-lived child per episode speaking JSON lines.

The child is started on the first decision (never through a shell), contained
(:mod:`playproof._containment`: what it spawns dies with it, even after
``setsid``) and leading a new process group. For each decision the driver
writes one request line (:class:`~playproof.drivers._wire.AgentRequest`) and
reads lines until one is a reply ``{"input": "...", "cost_usd": 0.001, "turn": 7}``:

- a line that is not such an object is a *stray* line: counted and discarded;
- a reply whose ``turn`` names an earlier decision is *late*: counted and
  discarded, and the cost it reports is charged to the current decision (it was
  spent during the run), answered or lost. Replies without ``turn`` are taken
  as current;
- no reply within the per-decision timeout *loses* the decision: the input is
  ``noop`` and its cost is the declared fixed cost, or unmeasured; more than
  ``max_consecutive_lost`` lost decisions in a row fail the run.

A child that exits, closes its stdout (while it or what it started keeps
running), or writes more than the per-decision or per-session byte cap, fails
the run with :class:`~playproof.errors.DriverError` at once: a closed stdout
is seen within :data:`STDOUT_PROBE_MAX_S` of waiting (``/proc`` shows no
process of the agent holding the pipe any more), never after the decision
timeout. The decisions answered before stay as they were. ``aclose()``
closes stdin, gives the child a moment to exit and then kills its process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from pydantic import ValidationError

from playproof._containment import ContainmentKind, describe_exit
from playproof.core.agent import NOOP, Action, DecisionContext, HistoryEntry, normalize_input
from playproof.core.observation import Observation
from playproof.drivers._cancel import CancelScope
from playproof.drivers._process import (
    OutputTail,
    actor_name,
    checked_argv,
    checked_env,
    discard_until_eof,
    kill_group,
    launcher,
    pipe_inode,
    pipe_still_held,
    reap,
    settle,
)
from playproof.drivers._process import spawn as spawn_process
from playproof.drivers._wire import AgentReply, build_request, check_fixed_cost, reply_cost
from playproof.errors import CostError, DriverError

__all__ = [
    "DEFAULT_DECISION_TIMEOUT_S",
    "DEFAULT_MAX_CONSECUTIVE_LOST",
    "DEFAULT_MAX_DECISION_BYTES",
    "DEFAULT_MAX_SESSION_BYTES",
    "EXIT_GRACE_S",
    "LATENCY_WINDOW",
    "STDOUT_PROBE_FIRST_S",
    "STDOUT_PROBE_MAX_S",
    "SessionDriver",
]

DEFAULT_DECISION_TIMEOUT_S = 30.0
"""Wall time from writing a request to reading its reply."""
DEFAULT_MAX_DECISION_BYTES = 1 << 20
"""Stdout bytes (reply plus stray lines) one decision may read."""
DEFAULT_MAX_SESSION_BYTES = 64 << 20
"""Stdout plus stderr bytes one session may write in total."""
DEFAULT_MAX_CONSECUTIVE_LOST = 3
"""Decisions in a row that may go unanswered before the session is declared dead."""
EXIT_GRACE_S = 0.5
"""How long ``aclose()`` lets the child exit on its own after stdin closes."""
LATENCY_WINDOW = 4096
"""Recent answer latencies kept for the percentiles in ``provenance()``."""
STDOUT_PROBE_FIRST_S = 0.05
"""How long a decision waits for output before it first checks that the agent still
holds its stdout (a reply that comes sooner costs no check)."""
STDOUT_PROBE_MAX_S = 0.5
"""The longest wait between two such checks (the wait doubles up to it)."""
_READ_CHUNK = 64 * 1024
_LAUNCHER_LAYERS = 2
"""Processes above a contained agent that keep its stdout open: ``unshare`` and its init."""


class _Session:
    """One running child: its pipes, its read buffer and its stderr drain."""

    def __init__(self, process: asyncio.subprocess.Process, seed: int, layers: int) -> None:
        self.process = process
        self.seed = seed
        self.layers = layers  # launcher processes above the agent, which hold its stdout too
        self.stdout_inode = pipe_inode(process, 1)
        self.buffer = bytearray()
        self.stderr = OutputTail()
        self.written = 0  # stdout + stderr bytes, against the session cap
        self.flood: str | None = None
        self.drain: asyncio.Task[None] | None = None


class SessionDriver:
    """Keep one agent process per episode and exchange one JSON line per decision."""

    kind = "session"

    def __init__(
        self,
        argv: Sequence[str],
        *,
        fixed_cost_usd: float | None = None,
        vision: bool = False,
        history_limit: int = 8,
        decision_timeout_s: float = DEFAULT_DECISION_TIMEOUT_S,
        max_decision_bytes: int = DEFAULT_MAX_DECISION_BYTES,
        max_session_bytes: int = DEFAULT_MAX_SESSION_BYTES,
        max_consecutive_lost: int = DEFAULT_MAX_CONSECUTIVE_LOST,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
    ) -> None:
        self._argv = checked_argv(argv)
        check_fixed_cost(fixed_cost_usd)
        if not decision_timeout_s > 0 or history_limit < 0 or max_consecutive_lost < 0:
            raise DriverError("timeout must be positive; history and lost limits non-negative")
        if not 0 < max_decision_bytes <= max_session_bytes:
            raise DriverError("byte caps must satisfy 0 < per-decision cap <= per-session cap")
        self._fixed_cost = fixed_cost_usd
        self._vision = vision
        self._history_limit = history_limit
        self._timeout_s = decision_timeout_s
        self._max_decision = max_decision_bytes
        self._max_session = max_session_bytes
        self._max_lost = max_consecutive_lost
        self._cwd = cwd
        self._env = checked_env(env)
        self.id = actor_name(self._argv, name)
        self.label = f"{self.kind}:{self.id}"
        """The actor as ``kind:id``, for messages (the record keeps kind and id apart)."""
        self._session: _Session | None = None
        self._scope = CancelScope()
        self._sessions = 0
        self._containment: ContainmentKind | None = None
        self._answered = 0
        self._lost = 0
        self._consecutive_lost = 0
        self._discarded = 0
        self._late_cost = 0.0
        self._owed_cost = 0.0  # reported by late answers, charged to the next decision
        self._latency_count = 0
        self._latency_total_ms = 0.0
        self._latency_max_ms = 0.0
        self._recent_ms: deque[float] = deque(maxlen=LATENCY_WINDOW)

    def __repr__(self) -> str:
        return f"SessionDriver(id={self.id!r})"

    async def act(
        self, observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> Action:
        """Send one request line and wait for the reply line (or lose the decision)."""
        request = build_request(
            observation, history, context, vision=self._vision, history_limit=self._history_limit
        )
        return await self._scope.run(
            self._decide(request + b"\n", context.turn, context.seed, context.vocabulary),
            context.cancel,
        )

    def provenance(self) -> dict[str, Any]:
        """Health counters: answered, lost, discarded, late cost, sessions, answer latency."""
        report: dict[str, Any] = {
            "sessions": self._sessions,
            "answered": self._answered,
            "lost": self._lost,
            "discarded": self._discarded,
            "late_cost_usd": self._late_cost,
        }
        if self._containment is not None:
            report["containment"] = self._containment
        if self._latency_count:
            recent = sorted(self._recent_ms)
            cuts = statistics.quantiles(recent, n=100, method="inclusive") if recent[1:] else []
            report["latency_ms"] = {
                "count": self._latency_count,
                "mean": self._latency_total_ms / self._latency_count,
                "max": self._latency_max_ms,
                "p50": cuts[49] if cuts else recent[0],
                "p95": cuts[94] if cuts else recent[0],
            }
        return report

    async def aclose(self) -> None:
        """End the session: close stdin, wait briefly, then kill the whole process group."""
        self._scope.close()
        await self._end_session()

    async def _end_session(self) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        process = session.process
        if process.stdin is not None:
            process.stdin.close()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(EXIT_GRACE_S):
                await process.wait()
        await reap(process)
        # The group is dead: drain what is left so both pipes see EOF and close (or, when
        # something the agent started outside its group holds them, close them).
        readers = [asyncio.ensure_future(discard_until_eof(process.stdout))]
        if session.drain is not None:
            readers.append(session.drain)
        await settle(readers, process)

    async def _decide(
        self, request: bytes, turn: int, seed: int, vocabulary: Sequence[str]
    ) -> Action:
        session = await self._ensure_session(seed)
        stdin = session.process.stdin
        if stdin is None:  # pragma: no cover - spawn always pipes stdin
            raise DriverError(f"{self.label} has no stdin")
        started = time.perf_counter()
        sent = False
        try:
            async with asyncio.timeout(self._timeout_s):
                try:
                    stdin.write(request)
                    await stdin.drain()
                except (BrokenPipeError, ConnectionResetError):
                    raise _SessionBrokenError(None) from None
                sent = True
                reply = await self._read_reply(session, turn)
        except TimeoutError:
            if not sent:  # half a request may be in the pipe: the stream cannot be trusted
                await self._fail(session, f"{self.label} stopped reading its requests")
            return self._lose()
        except _SessionBrokenError as broken:
            await self._fail(session, broken.reason)
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        self._answered += 1
        self._consecutive_lost = 0
        self._latency_count += 1
        self._latency_total_ms += elapsed_ms
        self._latency_max_ms = max(self._latency_max_ms, elapsed_ms)
        self._recent_ms.append(elapsed_ms)
        cost = reply_cost(reply, self._fixed_cost, source=self.label)
        return Action(normalize_input(reply.input, vocabulary), self._plus_owed(cost))

    def _plus_owed(self, cost: float | None) -> float | None:
        """``cost`` plus what late answers read during this decision reported (then settled)."""
        if not self._owed_cost:
            return cost
        owed, self._owed_cost = self._owed_cost, 0.0
        return None if cost is None else cost + owed

    def _lose(self) -> Action:
        self._lost += 1
        self._consecutive_lost += 1
        if self._consecutive_lost > self._max_lost:
            raise DriverError(
                f"{self.label} left {self._consecutive_lost} decisions in a row unanswered "
                f"(timeout {self._timeout_s} s each); the session is considered dead"
            )
        # A late answer read while this decision waited was paid for: a lost decision
        # carries its cost too (the run may end before another decision could).
        return Action(NOOP, self._plus_owed(self._fixed_cost))

    async def _ensure_session(self, seed: int) -> _Session:
        session = self._session
        if session is not None and session.seed != seed:
            await self._end_session()  # a new seed is a new episode: a fresh child
            session = None
        if session is None:
            contain = await launcher()
            self._containment = contain.kind
            process = await spawn_process(self._argv, cwd=self._cwd, env=self._env, contain=contain)
            session = _Session(process, seed, _LAUNCHER_LAYERS if contain.contained else 0)
            session.drain = asyncio.ensure_future(self._drain_stderr(session))
            self._session = session
            self._sessions += 1
        if session.flood is not None:
            await self._fail(session, None)
        return session

    async def _read_reply(self, session: _Session, turn: int) -> AgentReply:
        """Read lines until a current reply; stray and late lines are discarded."""
        read = 0
        while True:
            line = await self._read_line(session, read)
            read += len(line) + 1
            try:
                reply = AgentReply.model_validate_json(line)
            except ValidationError:
                self._discarded += 1
                continue
            if reply.turn is not None and reply.turn != turn:
                self._discarded += 1
                self._charge_late(reply)
                continue
            return reply

    def _charge_late(self, reply: AgentReply) -> None:
        try:
            cost = reply_cost(reply, None, source=self.label)
        except CostError:
            return  # a nonsense cost on a discarded line is not charged
        if cost:
            self._late_cost += cost
            self._owed_cost += cost

    async def _read_line(self, session: _Session, already_read: int) -> bytes:
        stdout = session.process.stdout
        if stdout is None:  # pragma: no cover - spawn always pipes stdout
            raise DriverError(f"{self.label} has no stdout")
        while True:
            end = session.buffer.find(b"\n")
            if end >= 0:
                line = bytes(session.buffer[:end])
                del session.buffer[: end + 1]
                return line
            if already_read + len(session.buffer) > self._max_decision:
                raise _SessionBrokenError(
                    f"{self.label} wrote more than {self._max_decision} bytes in one decision"
                )
            chunk = await self._read_chunk(session, stdout)
            if not chunk:
                raise _SessionBrokenError(None)
            session.written += len(chunk)
            if session.written > self._max_session:
                raise _SessionBrokenError(
                    f"{self.label} wrote more than {self._max_session} bytes in total"
                )
            session.buffer += chunk

    async def _read_chunk(self, session: _Session, stdout: asyncio.StreamReader) -> bytes:
        """The next stdout bytes; a stdout no process of the agent holds any more breaks."""
        wait, abandoned = STDOUT_PROBE_FIRST_S, False
        while True:
            try:
                async with asyncio.timeout(wait):
                    return await stdout.read(_READ_CHUNK)
            except TimeoutError:
                pass  # only this wait ran out: the decision's own timeout is outside
            if abandoned:  # and what was in the pipe when it was closed has been read
                raise _SessionBrokenError(
                    f"{self.label} closed its stdout after {self._answered} answers and kept "
                    "running: no reply can come"
                )
            inode = session.stdout_inode
            # The probe walks /proc (up to MAX_PROBED_PROCESSES entries): in a thread, so a
            # machine with many processes never stalls the event loop's other tasks.
            abandoned = inode is not None and not await asyncio.to_thread(
                pipe_still_held, session.process, inode, layers=session.layers
            )
            # Once abandoned, one more short wait reads what the agent wrote before closing.
            wait = STDOUT_PROBE_FIRST_S if abandoned else min(wait * 2, STDOUT_PROBE_MAX_S)

    async def _drain_stderr(self, session: _Session) -> None:
        stderr = session.process.stderr
        if stderr is None:  # pragma: no cover - spawn always pipes stderr
            return
        while chunk := await stderr.read(_READ_CHUNK):
            session.stderr.add(chunk)
            session.written += len(chunk)
            if session.written > self._max_session and session.flood is None:
                session.flood = f"{self.label} wrote more than {self._max_session} bytes in total"
                kill_group(session.process)

    async def _fail(self, session: _Session, reason: str | None) -> NoReturn:
        """Kill the session and raise; ``reason`` None means the child ended by itself."""
        status = await reap(session.process)
        if session.drain is not None:
            await settle([session.drain], session.process)  # its last words, for the message
        reason = reason or session.flood
        if reason is not None:
            reason += "; it was killed"
        else:
            ended = describe_exit(status, contained=self._containment == "pid-namespace")
            reason = f"{self.label} ended ({ended}) after {self._answered} answers"
        if self._session is session:
            await self._end_session()
        raise DriverError(reason + session.stderr.suffix())


class _SessionBrokenError(Exception):
    """The session cannot go on: it ended (reason None) or broke a bound (reason given)."""

    def __init__(self, reason: str | None) -> None:
        super().__init__(reason)
        self.reason = reason
