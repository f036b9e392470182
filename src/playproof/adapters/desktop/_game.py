"""A native desktop program as a game session that records its one live pass.

``reset(seed)`` launches the program (or attaches to it) and may be called
once: a nondeterministic program gets exactly one live pass, so there is no
second reset and no replay. The seed reaches the program as the environment
variable ``PLAYPROOF_SEED``. ``step(word)`` sends an allowlisted word (a word
outside the vocabulary sends nothing and is recorded as such), waits for the
output to complete, collects the declared files and appends a step to the
transcript. Evidence is read from the transcript by the spec's rules
(:class:`~playproof.core.transcript.EvidenceReader`), exactly as a verifier
reads it later. ``close()`` ends the program's whole process group (never a
process attached to by ``pid``, which playproof did not start).
"""

from __future__ import annotations

import base64
import hashlib
import os
import platform
import re
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from playproof._bounded import read_bounded
from playproof.adapters.desktop._process import (
    Program,
    find_descendant,
    process_alive,
    run_helper,
)
from playproof.adapters.desktop._spec import Collect, DesktopSpec, load_spec, pin_files
from playproof.core.canonical import canonical_json
from playproof.core.evidence import Evidence
from playproof.core.game import BuildIdentity, GameDescriptor, Platform, VerificationMode
from playproof.core.observation import MAX_TEXT_CHARS, Observation
from playproof.core.transcript import (
    MAX_EVENT_CHARS,
    MAX_INLINE_FILE_BYTES,
    MAX_TRANSCRIPT_STEP_BYTES,
    TRANSCRIPT_STOP_BYTES,
    CollectedFile,
    EvidenceReader,
    Transcript,
    TranscriptStep,
    build_digest_of,
)
from playproof.errors import RunError

__all__ = ["DESKTOP_PLATFORM", "DesktopGame", "make_game"]

DESKTOP_PLATFORM = Platform(
    family="desktop",
    modes=(VerificationMode.TRUSTED_RECORDER,),
    capabilities=("transcript",),
)
"""Desktop programs are verified from their recorder-signed transcript only."""

_SHELL = "/bin/sh"
_STAY_SCRIPT = '"$@"; while :; do sleep 3600; done'
"""Runs a launcher, then waits to be ended (the game it started lives in its group)."""

ATTACHED_EXIT = 0
"""The exit status recorded for an attached process that ended (its real status is unknown)."""
MAX_EVENTS_PER_STEP = 4096
"""The most lines one event file may gain in one step (what a transcript step records)."""


class _EventLog:
    """An append-only event file: what was read so far, and the lines it gained since."""

    def __init__(self) -> None:
        self.seen = b""

    def appended(self, collect: Collect, data: bytes) -> tuple[str, ...]:
        if not data.startswith(self.seen):
            raise RunError(
                f"event file {collect.path} was rewritten, not appended to; events files are "
                "append-only"
            )
        fresh = data[len(self.seen) :]
        complete = fresh.rfind(b"\n") + 1  # a line still being written waits for its end
        self.seen += fresh[:complete]
        lines = fresh[:complete].decode("utf-8", errors="replace").splitlines()
        events = []
        for line in lines:
            text = line.strip()
            if not text:
                continue
            if len(text) > MAX_EVENT_CHARS:
                raise RunError(f"event file {collect.path} has a line over {MAX_EVENT_CHARS} chars")
            events.append(text)
        if len(events) > MAX_EVENTS_PER_STEP:
            raise RunError(
                f"event file {collect.path} gained {len(events)} lines in one step, over "
                f"{MAX_EVENTS_PER_STEP} lines; make the program log fewer events per input"
            )
        return tuple(events)


class DesktopGame:
    """A desktop program driven by its spec, recording a transcript (module docstring)."""

    def __init__(self, spec: DesktopSpec, base: Path) -> None:
        self.spec = spec
        self.base = base
        self.cwd = (base / spec.launch.cwd).resolve()
        self.pins = pin_files(spec, base)
        spec_json = spec.model_dump(mode="json", exclude={"rules"})
        self._spec_json = spec_json
        self._descriptor = GameDescriptor(
            id=f"desktop-{spec.id}",
            vocabulary=spec.vocabulary,
            build=BuildIdentity(
                id=f"desktop/{spec.id}", digest=build_digest_of(spec_json, self.pins, spec.rules)
            ),
            platform=DESKTOP_PLATFORM,
        )
        self._prompt = (
            re.compile(f"(?:{spec.observe.prompt})\\Z") if spec.observe.prompt is not None else None
        )
        self._program: Program | None = None
        self._target_pid: int | None = None
        self._seed: int | None = None
        self._steps: list[TranscriptStep] = []
        self._events = {c.name: _EventLog() for c in spec.collect if c.kind == "events"}
        self._reader = EvidenceReader(spec.rules)
        self._evidence = Evidence()
        self._over = False
        self._observation = Observation(text="")
        self._started = time.monotonic()
        self._started_at = ""
        self._size = 0
        """Bytes of the transcript's signed form so far (its steps and all around them)."""

    @property
    def descriptor(self) -> GameDescriptor:
        """Id ``desktop-<spec id>``, the spec's vocabulary, the pinned build, desktop platform."""
        return self._descriptor

    @property
    def target_pid(self) -> int | None:
        """The process played (after launch), as this machine numbers it."""
        return self._target_pid

    def _env(self, seed: int) -> dict[str, str]:
        return {**os.environ, **self.spec.launch.env, "PLAYPROOF_SEED": str(seed)}

    def reset(self, seed: int) -> None:
        """Launch or attach, once: a desktop game has exactly one live pass."""
        if self._seed is not None:
            raise RunError(
                f"{self._descriptor.id} is a live desktop program: it gets exactly one pass and "
                "cannot be reset or replayed; verify its run from the signed transcript"
            )
        self._seed = seed
        self._started = time.monotonic()
        self._started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        launch, observe = self.spec.launch, self.spec.observe
        env = self._env(seed)
        if launch.command is not None:
            argv: tuple[str, ...] = launch.command
            if launch.mode != "spawn":
                # A launcher may exit once the game runs: the shell that started it stays,
                # so the game keeps its containment (and its parent) until close() ends both.
                argv = (_SHELL, "-c", _STAY_SCRIPT, "sh", *launch.command)
            self._program = Program(
                argv,
                cwd=self.cwd,
                env=env,
                stdin=self.spec.input.via == "stdin",
                stdout=observe.via == "stdout",
            )
            self._started = self._program.started
        if launch.mode == "spawn":
            assert self._program is not None
            self._target_pid = self._program.pid
        elif launch.mode == "pid":
            assert launch.pid is not None
            if not process_alive(launch.pid):
                raise RunError(f"process {launch.pid} is not running; start the game first")
            self._target_pid = launch.pid
        else:
            assert self._program is not None
            pid_file = self.cwd / launch.pid_file if launch.pid_file is not None else None
            self._target_pid = find_descendant(
                self._program.pid,
                name=launch.descendant,
                pid_file=pid_file,
                timeout_s=launch.ready_timeout_s,
                same_numbering=not self._program.contained,
            )
        # Every contract hash is 64 hex digits, so this is the size of what surrounds the steps.
        self._size = len(self._transcript("0" * 64, seed, ()).payload())
        self._record(None, None, self._clock())

    def _clock(self) -> float:
        return (time.monotonic() - self._started) * 1000.0

    def _exit_status(self) -> int | None:
        if self.spec.launch.mode == "spawn":
            assert self._program is not None
            return self._program.exit_status()
        assert self._target_pid is not None
        return None if process_alive(self._target_pid) else ATTACHED_EXIT

    def _observe(self) -> str:
        observe = self.spec.observe
        if observe.via == "capture":
            assert observe.capture is not None
            seed = self._seed if self._seed is not None else 0
            raw = run_helper(
                observe.capture,
                cwd=self.cwd,
                env=self._env(seed),
                timeout_s=observe.step_timeout_s,
                what="capture helper",
            )
            text = raw.decode("utf-8", errors="replace")
        else:
            assert self._program is not None
            text = self._program.take(
                self._prompt, observe.quiet_ms / 1000.0, observe.step_timeout_s
            )
        if len(text) > MAX_TEXT_CHARS:
            raise RunError(
                f"one observation is {len(text)} characters, over {MAX_TEXT_CHARS}; make the "
                "program print less per input"
            )
        return text

    def _collect(self) -> tuple[CollectedFile, ...]:
        collected = []
        for collect in self.spec.collect:
            path = self.cwd / collect.path
            if not path.exists():
                collected.append(CollectedFile(name=collect.name, present=False, size=0))
                continue
            data = read_bounded(path, collect.max_bytes, f"collected file {collect.name}", RunError)
            appended: tuple[str, ...] = ()
            if collect.kind == "events":
                appended = self._events[collect.name].appended(collect, data)
            inline = len(data) <= MAX_INLINE_FILE_BYTES and collect.kind != "events"
            collected.append(
                CollectedFile(
                    name=collect.name,
                    present=True,
                    size=len(data),
                    sha256=hashlib.sha256(data).hexdigest(),
                    content=base64.b64encode(data).decode("ascii") if inline else None,
                    appended=appended,
                )
            )
        return tuple(collected)

    def _record(self, word: str | None, sent: str | None, at_ms: float) -> None:
        output = self._observe() if sent is not None or word is None else ""
        step = TranscriptStep(
            turn=len(self._steps),
            input=word,
            sent=sent,
            output=output,
            files=self._collect(),
            exited=self._exit_status(),
            at_ms=at_ms,
            settled_ms=self._clock(),
        )
        # The transcript's steps are one JSON array: each step adds its canonical form and a comma.
        size = len(canonical_json(step.model_dump(mode="json", by_alias=True)))
        if size > MAX_TRANSCRIPT_STEP_BYTES:
            raise RunError(
                f"step {step.turn} would add {size} bytes to the transcript, over the "
                f"{MAX_TRANSCRIPT_STEP_BYTES} one step may add; make the program print or "
                "collect less per input"
            )
        self._size += size + (1 if self._steps else 0)
        self._steps.append(step)
        self._evidence = self._reader.read(step)
        self._over = self._over or self._reader.over(step)
        self._observation = Observation(text=output)

    def step(self, word: str) -> None:
        """Send ``word`` if it is allowlisted and the program still runs; record the step."""
        if self._seed is None:
            raise RunError("reset the desktop game (launch it) before stepping it")
        at_ms = self._clock()
        if word not in self.spec.vocabulary or self._over:
            self._record(word, None, at_ms)
            return
        text = self.spec.sent_text(word)
        if self.spec.input.via == "stdin":
            assert self._program is not None
            delivered = self._program.send(text, self.spec.observe.step_timeout_s)
        else:
            assert self.spec.input.helper is not None
            run_helper(
                [*self.spec.input.helper, text],
                cwd=self.cwd,
                env=self._env(self._seed),
                timeout_s=self.spec.input.helper_timeout_s,
                what="input helper",
            )
            delivered = True
        self._record(word, text if delivered else None, at_ms)

    def observe(self) -> Observation:
        """The program's output after the last input."""
        return self._observation

    def evidence(self) -> Evidence:
        """The evidence the spec's rules read from the last step."""
        return self._evidence

    def over(self) -> bool | None:
        """True once the program exited or its output matched the spec's ``over`` rule."""
        return self._over

    @property
    def transcript_bytes(self) -> int:
        """The size of the transcript's signed form (its payload) as it stands."""
        return self._size

    def transcript_full(self) -> bool:
        """True once the transcript reached TRANSCRIPT_STOP_BYTES: the run should stop."""
        return self._size >= TRANSCRIPT_STOP_BYTES

    def transcript(self, contract_hash: str, seed: int) -> Transcript:
        """The transcript of the pass so far (the launch is step 0)."""
        if not self._steps:
            raise RunError("the desktop game has not been launched: nothing was recorded")
        return self._transcript(contract_hash, seed, tuple(self._steps))

    def _transcript(
        self, contract_hash: str, seed: int, steps: tuple[TranscriptStep, ...]
    ) -> Transcript:
        """The transcript with ``steps``; with none (only to measure the rest), unvalidated."""
        fields: dict[str, Any] = dict(
            game_id=self._descriptor.id,
            build_digest=self._descriptor.build.digest,
            platform=DESKTOP_PLATFORM.family,
            modes=DESKTOP_PLATFORM.modes,
            contract_hash=contract_hash,
            seed=seed,
            spec=self._spec_json,
            pins=self.pins,
            rules=self.spec.rules,
            recorder={
                "playproof": _version(),
                "python": platform.python_version(),
                "launched_at": self._started_at,
                "containment": "pid-namespace"
                if self._program is not None and self._program.contained
                else "process-group",
            },
            steps=steps,
        )
        return Transcript(**fields) if steps else Transcript.model_construct(**fields)

    def close(self) -> None:
        """End the launched program's whole group (idempotent; an attached pid is left alone)."""
        program, self._program = self._program, None
        if program is not None:
            program.end()


def _version() -> str:
    try:
        return metadata.version("playproof")
    except metadata.PackageNotFoundError:
        return "unknown"


def make_game(spec_path: str) -> DesktopGame:
    """The desktop game a spec file describes (paths in it are relative to its folder)."""
    path = Path(spec_path)
    return DesktopGame(load_spec(path), path.resolve().parent)
