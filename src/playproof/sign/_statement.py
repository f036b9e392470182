"""in-toto Statement v1, and predicate kinds that say how a payload maps to one.

A statement names its subjects (artifacts by SHA-256), a predicate type URI and
the predicate itself. A :class:`PredicateKind` ties a predicate type to a Python
type: how to write it, how to read it back, and which subjects it must carry.
Run records are one kind; grade records reuse the same machinery.

>>> s = make_statement({"run-record": "a" * 64}, "https://example.com/p/v1", {"x": 1})
>>> s.to_json()["_type"]
'https://in-toto.io/Statement/v1'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from playproof.core.canonical import canonical_json
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


def sign_statement(statement: Statement, keys: SigningKey | Sequence[SigningKey]) -> Envelope:
    """Wrap ``statement`` in a DSSE envelope signed by ``keys``."""
    signers = [keys] if isinstance(keys, SigningKey) else list(keys)
    return sign_payload(IN_TOTO_PAYLOAD_TYPE, statement.to_payload(), signers)


@dataclass(frozen=True)
class PredicateKind(Generic[P]):
    """How one predicate type maps to a Python value and to the subjects it must carry.

    ``read`` may raise ``ValueError`` (pydantic's ``ValidationError`` is one) or
    :class:`~playproof.errors.FormatError`; a verifier reports it as a failed check.
    """

    predicate_type: str
    write: Callable[[P], dict[str, Any]]
    read: Callable[[dict[str, Any]], P]
    subjects: Callable[[P], dict[str, str]]
    """The subjects (name -> sha256 hex) a statement about this value must have."""

    def statement(self, value: P) -> Statement:
        """The statement for ``value``."""
        return make_statement(self.subjects(value), self.predicate_type, self.write(value))


def sign_predicate(
    kind: PredicateKind[P], value: P, keys: SigningKey | Sequence[SigningKey]
) -> Envelope:
    """Sign ``value`` as a statement of ``kind``."""
    return sign_statement(kind.statement(value), keys)
