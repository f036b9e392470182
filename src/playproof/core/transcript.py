"""The transcript of a trusted-recorder run, and the fixed rules that read evidence from it.

A game that cannot be replayed (a native desktop program whose output depends
on time, threads or the machine) gets exactly one live pass. The recorder
writes down everything the pass consisted of: each input and the exact bytes
sent for it, each observation (the program's output since the previous
input), every collected file (size, SHA-256 and, within a bound, its bytes),
the event lines appended to event files, the exit status once the program
ended, and the time of each. The recorder signs the transcript; the run record
pins its digest and the recorder's key (:class:`~playproof.core.record.RecorderPin`).

Evidence is never stored in the transcript: it is recomputed from the raw
observations by :class:`EvidenceRules`, which belong to the game's spec and so
to its build digest. :func:`transcript_evidence` is the one definition of what
a transcript shows; the live adapter and the verifier both call it, so a
verifier's milestones are those the live run saw, recomputed without the game.

>>> rules = EvidenceRules(state=(TextRule(key="gold", pattern=r"gold: (\\d+)"),))
>>> step = TranscriptStep(turn=0, output="gold: 7\\n", at_ms=0.0, settled_ms=1.0)
>>> [e.engine["gold"] for e in transcript_evidence(rules, [step])]
[7]
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Annotated, Any, Final, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from playproof.core.canonical import canonical_json, digest, parse_model, sha256_hex
from playproof.core.evidence import Evidence
from playproof.core.game import MAX_SEED, VerificationMode
from playproof.errors import FormatError

__all__ = [
    "MAX_EVENT_CHARS",
    "MAX_INLINE_FILE_BYTES",
    "MAX_SEALED_TRANSCRIPT_BYTES",
    "MAX_STEP_OUTPUT_CHARS",
    "MAX_TRANSCRIPT_BYTES",
    "MAX_TRANSCRIPT_STEP_BYTES",
    "TRANSCRIPT_PAYLOAD_TYPE",
    "TRANSCRIPT_SCHEMA",
    "TRANSCRIPT_STOP_BYTES",
    "CollectedFile",
    "EvidenceReader",
    "EvidenceRules",
    "FileField",
    "Recording",
    "TextEvent",
    "TextRule",
    "Transcript",
    "TranscriptStep",
    "build_digest_of",
    "file_bytes",
    "parse_transcript",
    "transcript_evidence",
    "transcript_over_at",
]

TRANSCRIPT_SCHEMA: Final = "playproof/transcript/v1"
TRANSCRIPT_PAYLOAD_TYPE: Final = "application/vnd.playproof.transcript+json"
"""The DSSE payload type a recorder signs a transcript under."""

MAX_TRANSCRIPT_BYTES = 16 * 1024 * 1024
"""The largest transcript payload a reader accepts (as large as a signed record)."""
MAX_SEALED_TRANSCRIPT_BYTES = 12 * 1024 * 1024 - 64 * 1024
"""The largest transcript payload a recorder signs.

Its base64 form, with the envelope around it, stays within the 16 MiB a
verifier reads of a signed envelope, so every sealed transcript can be checked.
"""
TRANSCRIPT_STOP_BYTES = 8 * 1024 * 1024
"""Once its transcript is this large, a recording game asks the run to stop."""
MAX_TRANSCRIPT_STEP_BYTES = MAX_SEALED_TRANSCRIPT_BYTES - TRANSCRIPT_STOP_BYTES
"""The most bytes one step may add to a transcript (a larger step is an error).

A run stops once its transcript reaches TRANSCRIPT_STOP_BYTES, and the step
that crossed it is at most this large, so a transcript never outgrows
MAX_SEALED_TRANSCRIPT_BYTES.
"""
MAX_STEP_OUTPUT_CHARS = 64 * 1024
"""Characters of program output one step keeps (more is an error, never cut silently)."""
MAX_INLINE_FILE_BYTES = 256 * 1024
"""The largest collected file whose bytes a transcript carries (larger: digest only)."""
MAX_EVENT_CHARS = 256
"""Characters of one event line."""
MAX_PATTERN_CHARS = 512
"""Characters of one rule's regular expression."""
_MAX_RULES = 64
_MAX_STEPS = 1_000_001
_MAX_FILES = 32
_MAX_INT = 2**53 - 1

Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
Pattern = Annotated[str, Field(min_length=1, max_length=MAX_PATTERN_CHARS)]
Milliseconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
EventName = Annotated[str, Field(min_length=1, max_length=MAX_EVENT_CHARS)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _compiles(pattern: str) -> str:
    try:
        re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        raise ValueError(f"not a regular expression: {exc}") from exc
    return pattern


class TextRule(_Frozen):
    """``engine[key]``: the integer the pattern's first group captures in a step's output.

    The last match in a step's output wins; a step without a match keeps the
    value of the previous step (a program prints its state when it changes).
    """

    key: Name
    pattern: Pattern

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        return _compiles(value)


class TextEvent(_Frozen):
    """Event ``event`` happens at the first step whose output matches ``pattern``."""

    event: EventName
    pattern: Pattern

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        return _compiles(value)


class FileField(_Frozen):
    """``save[key]``: the integer at JSON Pointer ``pointer`` in collected JSON file ``file``."""

    key: Name
    file: Name
    pointer: Annotated[str, Field(pattern=r"^(/[^/]*)*$", max_length=256)]


class EvidenceRules(_Frozen):
    """How evidence is read from a transcript (part of the game's spec and build digest).

    ``state`` and ``events`` read each step's output; ``save`` reads collected
    JSON files; ``save_hash`` names the collected file whose SHA-256 is the
    snapshot's ``save_hash``; ``over`` is a pattern whose match in a step's
    output means the game is over (a program that exited is over too). Lines
    appended to event files are events as they are. Patterns are Python
    regular expressions matched line-aware (``^`` and ``$`` match at every
    line's start and end).
    """

    state: Annotated[tuple[TextRule, ...], Field(max_length=_MAX_RULES)] = ()
    events: Annotated[tuple[TextEvent, ...], Field(max_length=_MAX_RULES)] = ()
    save: Annotated[tuple[FileField, ...], Field(max_length=_MAX_RULES)] = ()
    save_hash: Name | None = None
    over: Pattern | None = None

    @field_validator("over")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        return None if value is None else _compiles(value)


class CollectedFile(_Frozen):
    """A collected file after one step: its size and digest, and its bytes when small enough.

    ``present`` is False when the file did not exist (then size 0 and no
    digest). ``content`` is the base64 of the bytes, None when over
    :data:`MAX_INLINE_FILE_BYTES`; ``appended`` lists the lines an event file
    gained since the previous step.
    """

    name: Name
    present: bool
    size: Annotated[int, Field(ge=0)]
    sha256: Sha256Hex | None = None
    content: str | None = None
    appended: Annotated[tuple[EventName, ...], Field(max_length=4096)] = ()

    @model_validator(mode="after")
    def _consistent(self) -> CollectedFile:
        if not self.present and (self.size or self.sha256 or self.content or self.appended):
            raise ValueError(f"file {self.name} is absent but has a size, digest or content")
        if self.present and self.sha256 is None:
            raise ValueError(f"file {self.name} is present without a digest")
        return self


class TranscriptStep(_Frozen):
    """One step: the input (None for the launch, turn 0), what was sent, seen and collected.

    ``at_ms`` is when the input was sent and ``settled_ms`` when its output was
    complete, both in milliseconds since the program was launched.
    ``exited`` is the program's exit status once it has ended.
    """

    turn: Annotated[int, Field(ge=0)]
    input: Annotated[str, Field(min_length=1, max_length=4096)] | None = None
    sent: Annotated[str, Field(max_length=4096)] | None = None
    output: Annotated[str, Field(max_length=MAX_STEP_OUTPUT_CHARS)] = ""
    files: Annotated[tuple[CollectedFile, ...], Field(max_length=_MAX_FILES)] = ()
    exited: int | None = None
    at_ms: Milliseconds
    settled_ms: Milliseconds


class Transcript(_Frozen):
    """Everything one live pass of a trusted-recorder run consisted of (module docstring).

    ``spec`` is the game's spec as JSON and ``pins`` the SHA-256 of each
    executable and asset it names; the build digest is
    :func:`build_digest_of` of the two, so the evidence rules a verifier
    applies are the ones the record's build digest pins.
    """

    schema_: Literal["playproof/transcript/v1"] = Field(TRANSCRIPT_SCHEMA, alias="schema")
    game_id: Annotated[str, Field(min_length=1, max_length=256)]
    build_digest: Sha256Hex
    platform: Annotated[str, Field(min_length=1, max_length=64)]
    modes: Annotated[tuple[VerificationMode, ...], Field(min_length=1)]
    contract_hash: Sha256Hex
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)]
    spec: dict[str, Any]
    pins: dict[Annotated[str, Field(max_length=1024)], Sha256Hex] = Field(max_length=256)
    rules: EvidenceRules
    recorder: dict[Annotated[str, Field(max_length=64)], str] = Field(
        default_factory=dict, max_length=16
    )
    steps: Annotated[tuple[TranscriptStep, ...], Field(min_length=1, max_length=_MAX_STEPS)]

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        """The JSON form a recorder signs."""
        return self.model_dump(mode="json", by_alias=True)

    def payload(self) -> bytes:
        """The exact bytes a recorder signs: the RFC 8785 form of :meth:`to_json`."""
        return canonical_json(self.to_json())

    @property
    def inputs(self) -> tuple[str, ...]:
        """The inputs of steps 1, 2, ... in order."""
        return tuple(step.input or "" for step in self.steps[1:])


@runtime_checkable
class Recording(Protocol):
    """A game session that records its one live pass as a :class:`Transcript`."""

    def transcript(self, contract_hash: str, seed: int) -> Transcript:
        """The transcript of the pass so far (launch and every input since)."""
        ...

    def transcript_full(self) -> bool:
        """True once the transcript is as long as it may grow (TRANSCRIPT_STOP_BYTES).

        The decision loop then ends the run (stop reason ``stopped``) before
        the next decision, so that the transcript stays small enough to sign
        and to verify.
        """
        ...


def build_digest_of(spec: dict[str, Any], pins: dict[str, str], rules: EvidenceRules) -> str:
    """The build digest of a recorded game: its spec, the digests of its files, its rules."""
    return digest(
        {"kind": "desktop", "spec": spec, "pins": pins, "rules": rules.model_dump(mode="json")}
    )


def parse_transcript(data: bytes | str) -> Transcript:
    """Read a transcript strictly (at most MAX_TRANSCRIPT_BYTES); FormatError says why."""
    return parse_model(Transcript, data, limit=MAX_TRANSCRIPT_BYTES, what="transcript")


def file_bytes(collected: CollectedFile) -> bytes | None:
    """A collected file's bytes from the transcript (None: not carried); FormatError when bad."""
    if collected.content is None:
        return None
    try:
        data = base64.b64decode(collected.content, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise FormatError(f"file {collected.name}: content is not base64") from exc
    if len(data) != collected.size or sha256_hex(data) != collected.sha256:
        raise FormatError(f"file {collected.name}: content does not match its size and digest")
    return data


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.MULTILINE)


def _integer(text: str) -> int | None:
    try:
        value = int(text)
    except ValueError:
        return None
    return value if -_MAX_INT <= value <= _MAX_INT else None


def _pointer(document: Any, pointer: str) -> int | None:
    """The integer at JSON Pointer ``pointer`` (RFC 6901) in ``document``, else None."""
    node = document
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    if type(node) is int and -_MAX_INT <= node <= _MAX_INT:
        return node
    return None


def _json_of(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


class EvidenceReader:
    """Reads the evidence of one step after another (state carries over between steps)."""

    def __init__(self, rules: EvidenceRules) -> None:
        self.rules = rules
        self._engine: dict[str, int] = {}
        self._seen: set[str] = set()
        self._over = _compiled(rules.over) if rules.over is not None else None

    def over(self, step: TranscriptStep) -> bool:
        """True when ``step`` shows the game over: the program exited or ``rules.over`` matched."""
        return step.exited is not None or (
            self._over is not None and self._over.search(step.output) is not None
        )

    def read(self, step: TranscriptStep) -> Evidence:
        """The evidence snapshot after ``step``; FormatError when a file's bytes are not its own."""
        rules, engine, seen, output = self.rules, self._engine, self._seen, step.output
        for rule in rules.state:
            matches = _compiled(rule.pattern).findall(output)
            if matches:
                last = matches[-1]
                value = _integer(last[0] if isinstance(last, tuple) else last)
                if value is not None:
                    engine[rule.key] = value
        events: list[str] = [
            event.event
            for event in rules.events
            if event.event not in seen and _compiled(event.pattern).search(output)
        ]
        files = {f.name: f for f in step.files}
        for collected in step.files:
            events.extend(collected.appended)
        documents: dict[str, Any] = {}
        save: dict[str, int] = {}
        for field in rules.save:
            collected_file = files.get(field.file)
            if collected_file is None or not collected_file.present:
                continue
            if field.file not in documents:
                documents[field.file] = _json_of(file_bytes(collected_file))
            value = _pointer(documents[field.file], field.pointer)
            if value is not None:
                save[field.key] = value
        save_hash = None
        if rules.save_hash is not None:
            hashed = files.get(rules.save_hash)
            save_hash = hashed.sha256 if hashed is not None and hashed.present else None
        fresh = tuple(dict.fromkeys(e for e in events if e not in seen))
        seen.update(fresh)
        return Evidence(engine=dict(engine), save=save, save_hash=save_hash, events=fresh)


def transcript_evidence(
    rules: EvidenceRules, steps: Sequence[TranscriptStep]
) -> Iterator[Evidence]:
    """The evidence snapshot of each step, in order (snapshot ``i`` follows input ``i``).

    Raises :class:`~playproof.errors.FormatError` when a collected file's
    bytes do not match its recorded size and digest.
    """
    reader = EvidenceReader(rules)
    for step in steps:
        yield reader.read(step)


def transcript_over_at(rules: EvidenceRules, steps: Sequence[TranscriptStep]) -> int | None:
    """The first step at which the game was over (exited, or ``rules.over`` matched), or None."""
    reader = EvidenceReader(rules)
    for index, step in enumerate(steps):
        if reader.over(step):
            return index
    return None
