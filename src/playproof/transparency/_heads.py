"""Signed tree heads: the size and root of the log at one moment, signed with the log key.

The signed bytes are the RFC 8785 canonical JSON of the head without its
signature, plus a ``type`` member naming this format (so a tree-head
signature can never be taken for any other document the same key signs)::

    {"log_id":"<hex>","root_hash":"<hex>","timestamp":<ms>,"tree_size":<n>,
     "type":"https://playproof.dev/log/tree-head/v1"}

``log_id`` is the key id of the log key (SHA-256 hex of its 32 raw public
bytes), so a head names the key that must have signed it; ``timestamp`` is
milliseconds since the Unix epoch; the signature is Ed25519, base64.

>>> from playproof.sign import SigningKey
>>> from playproof.transparency import EMPTY_ROOT
>>> key = SigningKey.generate()
>>> head = sign_tree_head(key, tree_size=0, root_hash=EMPTY_ROOT, timestamp=1)
>>> check_tree_head(head, key.verifying_key).valid
True
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field

from playproof.core.canonical import canonical_json, parse_model
from playproof.errors import FormatError
from playproof.sign import SigningKey, VerifyingKey
from playproof.transparency._hashing import HASH_BYTES
from playproof.transparency._verify import MAX_TREE_SIZE, ProofResult

__all__ = [
    "HEAD_STEPS",
    "MAX_TIMESTAMP_MS",
    "MAX_TREE_HEAD_BYTES",
    "TREE_HEAD_TYPE",
    "HexHash",
    "TreeHead",
    "check_tree_head",
    "parse_tree_head",
    "sign_tree_head",
    "tree_head_bytes",
]

TREE_HEAD_TYPE: Final = "https://playproof.dev/log/tree-head/v1"
"""The ``type`` member of a tree head's signed bytes."""
MAX_TREE_HEAD_BYTES: Final = 4096
"""The largest tree head document read; a real one is about 300 bytes."""
MAX_TIMESTAMP_MS: Final = 2**53 - 1
SIGNATURE_BYTES: Final = 64

HEX_HASH_PATTERN: Final = r"^[0-9a-f]{64}$"
HexHash = Annotated[str, Field(pattern=HEX_HASH_PATTERN, min_length=64, max_length=64)]
"""A SHA-256 hash as 64 lower-case hex characters."""
_BASE64_SIGNATURE = r"^[A-Za-z0-9+/]{86}==$"

HEAD_WELL_FORMED = "head-well-formed"
LOG_ID_MATCHES = "log-id-matches"
HEAD_SIGNATURE_VALID = "head-signature-valid"
HEAD_STEPS: Final = (HEAD_WELL_FORMED, LOG_ID_MATCHES, HEAD_SIGNATURE_VALID)
"""The step ids of checking a tree head, in order."""


class TreeHead(BaseModel):
    """A signed tree head (STH): the log's size and root at ``timestamp``, signed by the log."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    log_id: HexHash
    tree_size: Annotated[int, Field(ge=0, le=MAX_TREE_SIZE)]
    root_hash: HexHash
    timestamp: Annotated[int, Field(ge=0, le=MAX_TIMESTAMP_MS)]
    signature: Annotated[str, Field(pattern=_BASE64_SIGNATURE, min_length=88, max_length=88)]

    @property
    def root(self) -> bytes:
        """The root hash as 32 bytes."""
        return bytes.fromhex(self.root_hash)

    def signed_bytes(self) -> bytes:
        """The bytes the signature covers (see the module docs)."""
        return tree_head_bytes(self.log_id, self.tree_size, self.root_hash, self.timestamp)

    def to_json(self) -> dict[str, Any]:
        """The head as a JSON object."""
        return self.model_dump(mode="json")


def tree_head_bytes(log_id: str, tree_size: int, root_hash: str, timestamp: int) -> bytes:
    """The canonical bytes a tree head's signature covers."""
    return canonical_json(
        {
            "log_id": log_id,
            "root_hash": root_hash,
            "timestamp": timestamp,
            "tree_size": tree_size,
            "type": TREE_HEAD_TYPE,
        }
    )


def sign_tree_head(
    key: SigningKey, *, tree_size: int, root_hash: bytes, timestamp: int
) -> TreeHead:
    """Sign the head of a tree of ``tree_size`` leaves whose root is ``root_hash``.

    ``timestamp`` is milliseconds since the Unix epoch (the caller reads the
    clock). Raises :class:`~playproof.errors.FormatError` for a value the
    format cannot carry.
    """
    if not isinstance(root_hash, bytes) or len(root_hash) != HASH_BYTES:
        raise FormatError(f"a root hash is {HASH_BYTES} bytes")
    unsigned = {
        "log_id": key.key_id,
        "tree_size": tree_size,
        "root_hash": root_hash.hex(),
        "timestamp": timestamp,
    }
    placeholder = base64.b64encode(bytes(SIGNATURE_BYTES)).decode("ascii")
    head = parse_model(
        TreeHead,
        {**unsigned, "signature": placeholder},
        limit=MAX_TREE_HEAD_BYTES,
        what="tree head",
    )
    signature = base64.b64encode(key.sign(head.signed_bytes())).decode("ascii")
    return head.model_copy(update={"signature": signature})


def parse_tree_head(data: bytes | str | Any) -> TreeHead:
    """Read a tree head strictly from JSON text or parsed JSON; FormatError and nothing else."""
    if isinstance(data, TreeHead):
        return data
    return parse_model(TreeHead, data, limit=MAX_TREE_HEAD_BYTES, what="tree head")


def check_tree_head(data: TreeHead | bytes | str | Any, log_key: VerifyingKey) -> ProofResult:
    """Check a tree head is well formed, names ``log_key`` and is signed by it; never raises."""
    try:
        head = parse_tree_head(data)
    except FormatError as exc:
        return ProofResult.fails(HEAD_WELL_FORMED, str(exc))
    return _check_parsed_head(head, log_key)


def _check_parsed_head(head: TreeHead, log_key: VerifyingKey) -> ProofResult:
    if head.log_id != log_key.key_id:
        return ProofResult.fails(
            LOG_ID_MATCHES,
            f"the tree head names log {head.log_id[:16]}..., not the given log key "
            f"{log_key.key_id[:16]}...; give the key of the log that signed it",
        )
    try:
        signature = base64.b64decode(head.signature, validate=True)
    except (binascii.Error, ValueError):
        return ProofResult.fails(HEAD_SIGNATURE_VALID, "the signature is not base64")
    if not log_key.verify(signature, head.signed_bytes()):
        return ProofResult.fails(
            HEAD_SIGNATURE_VALID, "the tree head's signature does not verify with the log key"
        )
    return ProofResult.holds(f"tree head of size {head.tree_size} signed by the log key")
