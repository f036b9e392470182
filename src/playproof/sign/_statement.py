"""in-toto Statement v1, and predicate kinds that say how a payload maps to one.

A statement names its subjects (artifacts by SHA-256), a predicate type URI and
the predicate itself. A :class:`PredicateKind` ties a predicate type to a Python
type: how to write it, how to read it back, and which subjects it must carry.
Run records are one kind; grade records reuse the same machinery.

The predicate's canonical bytes are computed once per signature: their SHA-256
is the predicate's own subject, and the same bytes are spliced into the
canonical statement (an object's canonical form is its members in order), so a
long record is never serialized twice.

>>> s = make_statement({"run-record": "a" * 64}, "https://example.com/p/v1", {"x": 1})
>>> s.to_json()["_type"]
'https://in-toto.io/Statement/v1'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from playproof.core.canonical import canonical_json, canonical_object, sha256_hex
from playproof.sign._dsse import Envelope, sign_payload
from playproof.sign._keys import SigningKey

__all__ = [
    "IN_TOTO_PAYLOAD_TYPE",
    "STATEMENT_TYPE",
    "PredicateKind",
    "Statement",
    "Subject",
    "make_statement",
    "sign_predicate",
    "sign_statement",
    "statement_payload",
]

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"

MAX_SUBJECTS = 64
MAX_DIGESTS = 8
SHA256_PATTERN = r"^[0-9a-f]{64}$"

P = TypeVar("P")


class Subject(BaseModel):
    """An artifact the statement is about: a name and its digests (``sha256`` required)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=512)]
    digest: Annotated[
        dict[Annotated[str, Field(max_length=64)], Annotated[str, Field(max_length=256)]],
        Field(min_length=1, max_length=MAX_DIGESTS),
    ]

    @field_validator("digest")
    @classmethod
    def _has_sha256(cls, value: dict[str, str]) -> dict[str, str]:
        sha = value.get("sha256")
        if sha is None:
            raise ValueError("a subject needs a sha256 digest")
        if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise ValueError("sha256 must be 64 lower-case hex characters")
        return value

    @property
    def sha256(self) -> str:
        """The subject's SHA-256 hex digest."""
        return self.digest["sha256"]


class Statement(BaseModel):
    """An in-toto Statement v1: ``_type``, ``subject``, ``predicateType``, ``predicate``."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    type_: Literal["https://in-toto.io/Statement/v1"] = Field(STATEMENT_TYPE, alias="_type")
    subject: Annotated[tuple[Subject, ...], Field(min_length=1, max_length=MAX_SUBJECTS)]
    predicateType: Annotated[str, Field(min_length=1, max_length=256)]  # noqa: N815
    predicate: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The statement as a JSON object (field names as the spec spells them)."""
        return self.model_dump(mode="json", by_alias=True)

    def to_payload(self) -> bytes:
        """The canonical (RFC 8785) JSON bytes that go into the envelope."""
        return canonical_json(self.to_json())


def make_statement(
    subjects: Mapping[str, str], predicate_type: str, predicate: Mapping[str, Any]
) -> Statement:
    """A statement over ``subjects`` (name -> sha256 hex) carrying ``predicate``."""
    return Statement(
        subject=tuple(Subject(name=name, digest={"sha256": sha}) for name, sha in subjects.items()),
        predicateType=predicate_type,
        predicate=dict(predicate),
    )


def statement_payload(subjects: Mapping[str, str], predicate_type: str, predicate: bytes) -> bytes:
    """The canonical statement bytes, from the predicate's canonical bytes (spliced in as is).

    Equal to ``make_statement(subjects, predicate_type, value).to_payload()``
    when ``predicate`` is ``canonical_json(value)``; the predicate is not
    serialized again.
    """
    listed = [
        Subject(name=name, digest={"sha256": sha}).model_dump(mode="json")
        for name, sha in subjects.items()
    ]
    if not 1 <= len(listed) <= MAX_SUBJECTS:
        raise ValueError(f"a statement has 1 to {MAX_SUBJECTS} subjects, not {len(listed)}")
    return canonical_object(
        {
            "_type": canonical_json(STATEMENT_TYPE),
            "predicate": predicate,
            "predicateType": canonical_json(predicate_type),
            "subject": canonical_json(listed),
        }
    )


def sign_statement(statement: Statement, keys: SigningKey | Sequence[SigningKey]) -> Envelope:
    """Wrap ``statement`` in a DSSE envelope signed by ``keys``."""
    signers = [keys] if isinstance(keys, SigningKey) else list(keys)
    return sign_payload(IN_TOTO_PAYLOAD_TYPE, statement.to_payload(), signers)


@dataclass(frozen=True)
class PredicateKind(Generic[P]):
    """How one predicate type maps to a Python value and to the subjects it must carry.

    The predicate's own subject (``self_subject``) is the SHA-256 of its
    canonical JSON bytes, computed from those bytes; ``pins`` gives the other
    subjects (what the predicate is about, e.g. a build digest). ``read``
    turns the predicate's JSON text (already checked for duplicate keys and
    NaN) into the value, strictly; it may raise ``ValueError`` or
    :class:`~playproof.errors.FormatError`, which a verifier reports as a
    failed check.
    """

    predicate_type: str
    write: Callable[[P], dict[str, Any]]
    read: Callable[[bytes], P]
    self_subject: str
    """The subject name under which the predicate's own digest appears."""
    pins: Callable[[P], dict[str, str]]
    """The other subjects (name -> sha256 hex) a statement about this value must have."""
    encode: Callable[[P], bytes] | None = None
    """The canonical bytes of ``write(value)``, written faster (optional; tests hold it equal)."""
    encode_parsed: Callable[[Any], bytes] | None = None
    """The canonical bytes of a predicate parsed from JSON, written faster (optional, likewise)."""
    read_parsed: Callable[[Any], P | None] | None = None
    """Reads the predicate from its parsed JSON, as strictly as ``read`` reads its text, or
    returns None to have the text read (optional): used when the payload is canonical, so
    a long predicate is parsed once."""

    def canonical(self, value: P) -> bytes:
        """The canonical JSON bytes of ``value`` as a predicate."""
        if self.encode is not None:
            return self.encode(value)
        return canonical_json(self.write(value))

    def canonical_parsed(self, predicate: Any) -> bytes:
        """The canonical JSON bytes of a predicate as received (parsed JSON)."""
        if self.encode_parsed is not None:
            return self.encode_parsed(predicate)
        return canonical_json(predicate)

    def subjects_for(self, value: P, predicate: bytes) -> dict[str, str]:
        """The subjects, given the predicate's canonical bytes (own digest first)."""
        return self.subjects_with(value, sha256_hex(predicate))

    def subjects_with(self, value: P, digest: str) -> dict[str, str]:
        """The subjects, given the SHA-256 hex of the predicate's canonical bytes."""
        return {self.self_subject: digest, **self.pins(value)}

    def subjects(self, value: P) -> dict[str, str]:
        """The subjects (name -> sha256 hex) a statement about ``value`` must have."""
        return self.subjects_for(value, self.canonical(value))

    def statement(self, value: P) -> Statement:
        """The statement for ``value``."""
        return make_statement(self.subjects(value), self.predicate_type, self.write(value))

    def payload(self, value: P) -> bytes:
        """The canonical statement bytes for ``value``, serializing the predicate once."""
        predicate = self.canonical(value)
        return statement_payload(
            self.subjects_for(value, predicate), self.predicate_type, predicate
        )


def sign_predicate(
    kind: PredicateKind[P], value: P, keys: SigningKey | Sequence[SigningKey]
) -> Envelope:
    """Sign ``value`` as a statement of ``kind``; the predicate is serialized once."""
    signers = [keys] if isinstance(keys, SigningKey) else list(keys)
    return sign_payload(IN_TOTO_PAYLOAD_TYPE, kind.payload(value), signers)
