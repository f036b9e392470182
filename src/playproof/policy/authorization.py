"""Authorization signatures: ECDSA P-256 over the RFC 8785 canonical action.

The deployment's key is derived from a fixed seed so that the world is
reproducible; signatures are deterministic (RFC 6979 nonces), so the same
action always carries the same signature and replay regenerates it exactly.
The public key travels in the envelope (SEC1 compressed point, hex), which is
what a verifier trusts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from playproof.core.canonical import canonical_json
from playproof.errors import FormatError

__all__ = [
    "DEPLOYMENT_KEY_SEED",
    "DEPLOYMENT_PUBLIC_KEY",
    "MAX_SIGNATURE_HEX",
    "VERIFIED_CACHE",
    "deployment_key",
    "forget_verifications",
    "public_key_hex",
    "sign_action",
    "verify_action",
]

DEPLOYMENT_KEY_SEED = b"playproof/solana/deployment-key/v1"
"""The fixed seed the reference deployment's P-256 key is derived from."""
MAX_SIGNATURE_HEX = 160
"""A DER-encoded P-256 signature is at most 72 bytes (144 hex digits)."""
VERIFIED_CACHE = 4096
"""Signature checks remembered (key, canonical action, signature -> valid)."""

_CURVE = ec.SECP256R1()
# The group order of P-256: the private scalar must lie in 1..n-1.
_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def _algorithm() -> ec.ECDSA:
    return ec.ECDSA(hashes.SHA256(), deterministic_signing=True)


def deployment_key(seed: bytes = DEPLOYMENT_KEY_SEED) -> ec.EllipticCurvePrivateKey:
    """The P-256 private key derived from ``seed`` (SHA-256, reduced into the group)."""
    scalar = int.from_bytes(hashlib.sha256(seed).digest(), "big") % (_ORDER - 1) + 1
    return ec.derive_private_key(scalar, _CURVE)


def public_key_hex(key: ec.EllipticCurvePrivateKey) -> str:
    """The SEC1 compressed public point of ``key``, hex."""
    return key.public_key().public_bytes(Encoding.X962, PublicFormat.CompressedPoint).hex()


DEPLOYMENT_PUBLIC_KEY = public_key_hex(deployment_key())


def sign_action(key: ec.EllipticCurvePrivateKey, action: Mapping[str, Any]) -> str:
    """The DER signature (hex) of the canonical JSON of ``action``."""
    return key.sign(canonical_json(dict(action)), _algorithm()).hex()


@lru_cache(maxsize=64)
def _public_key(public_hex: str) -> ec.EllipticCurvePublicKey | None:
    try:
        return ec.EllipticCurvePublicKey.from_encoded_point(_CURVE, bytes.fromhex(public_hex))
    except (ValueError, TypeError):
        return None


@lru_cache(maxsize=VERIFIED_CACHE)
def _verified(public_hex: str, message: bytes, signature_hex: str) -> bool:
    public = _public_key(public_hex)
    if public is None:
        return False
    try:
        public.verify(bytes.fromhex(signature_hex), message, _algorithm())
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def forget_verifications() -> None:
    """Drop the remembered signature checks (a benchmark measuring cold checks calls this)."""
    _verified.cache_clear()


def verify_action(public_hex: str, action: Mapping[str, Any], signature_hex: str) -> bool:
    """True when ``signature_hex`` signs the canonical ``action`` under ``public_hex``.

    Never raises: a malformed key or signature is simply not valid. The result
    for the same key, canonical bytes and signature is kept (a pure function of
    them), so the check group does not pay again for what replay just checked.
    """
    if not isinstance(signature_hex, str) or len(signature_hex) > MAX_SIGNATURE_HEX:
        return False
    if not isinstance(public_hex, str):
        return False
    try:
        message = canonical_json(dict(action))
    except (FormatError, ValueError, TypeError):
        return False
    return _verified(public_hex, message, signature_hex)
