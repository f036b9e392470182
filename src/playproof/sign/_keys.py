"""Ed25519 signing and verifying keys, their files, and their key ids.

A private key is stored as an unencrypted (or password-protected) PKCS#8 PEM
file with mode 0600; a public key as a SubjectPublicKeyInfo PEM file, the
standard form that openssl and DSSE tooling read as is. The key id is the SHA-256 hex
of the 32 raw public key bytes.

>>> key = SigningKey.generate()
>>> key.verifying_key.verify(key.sign(b"hi"), b"hi")
True
>>> len(key.key_id)
64
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from playproof._bounded import read_bounded
from playproof.core.canonical import sha256_hex
from playproof.errors import SigningKeyError

__all__ = ["MAX_KEY_FILE_BYTES", "SigningKey", "VerifyingKey"]

MAX_KEY_FILE_BYTES = 64 * 1024
"""The largest key file playproof reads; a PEM Ed25519 key is about 120 bytes."""

RAW_PUBLIC_KEY_BYTES = 32
SIGNATURE_BYTES = 64
PRIVATE_KEY_MODE = 0o600


def _read_key_file(path: Path, what: str) -> bytes:
    # The bounded reader refuses a FIFO, a device or a folder before reading a byte.
    return read_bounded(path, MAX_KEY_FILE_BYTES, what, SigningKeyError)


def _write_key_file(path: Path, data: bytes, *, mode: int, overwrite: bool, what: str) -> None:
    """Write ``data`` with ``mode`` from the first byte on; never truncate in place."""
    if path.exists() and not overwrite:
        raise SigningKeyError(f"refusing to overwrite the existing {what} {path} (overwrite=False)")
    # Write a fresh file with O_EXCL and move it over the target, so a key is
    # never readable with looser permissions, even for an instant.
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            os.write(fd, data)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        if overwrite:
            os.replace(temp, path)
        else:
            # link() fails if the target appeared meanwhile: no silent overwrite.
            os.link(temp, path)
    except FileExistsError as exc:
        if exc.filename is not None and Path(exc.filename) == temp:
            raise SigningKeyError(f"cannot write {what} {path}: {temp} is in the way") from exc
        raise SigningKeyError(f"refusing to overwrite the existing {what} {path}") from exc
    except OSError as exc:
        raise SigningKeyError(f"cannot write {what} {path}: {exc.strerror or exc}") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def _key_id(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return sha256_hex(raw)


class VerifyingKey:
    """An Ed25519 public key: checks signatures; its key id names it in envelopes."""

    __slots__ = ("_key", "_key_id")

    def __init__(self, key: Ed25519PublicKey) -> None:
        self._key = key
        self._key_id = _key_id(key)

    @classmethod
    def from_raw(cls, raw: bytes) -> VerifyingKey:
        """A key from its 32 raw bytes."""
        if len(raw) != RAW_PUBLIC_KEY_BYTES:
            raise SigningKeyError(
                f"an Ed25519 public key is {RAW_PUBLIC_KEY_BYTES} bytes, not {len(raw)}"
            )
        return cls(Ed25519PublicKey.from_public_bytes(raw))

    @classmethod
    def from_pem(cls, data: bytes) -> VerifyingKey:
        """A key from SubjectPublicKeyInfo PEM text."""
        if len(data) > MAX_KEY_FILE_BYTES:
            raise SigningKeyError(f"public key PEM is over {MAX_KEY_FILE_BYTES} bytes")
        if b"PRIVATE KEY" in data:
            raise SigningKeyError(
                "this is a private key; give the public key (SigningKey.verifying_key.save)"
            )
        try:
            key = serialization.load_pem_public_key(data)
        except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
            raise SigningKeyError(f"not a PEM public key: {exc}") from exc
        if not isinstance(key, Ed25519PublicKey):
            raise SigningKeyError(
                f"expected an Ed25519 public key, got {type(key).__name__.lstrip('_')}"
            )
        return cls(key)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> VerifyingKey:
        """Read a public key PEM file (at most :data:`MAX_KEY_FILE_BYTES`)."""
        file = Path(path)
        data = _read_key_file(file, "public key file")
        try:
            return cls.from_pem(data)
        except SigningKeyError as exc:
            raise SigningKeyError(f"{file}: {exc}") from exc

    @property
    def key_id(self) -> str:
        """SHA-256 hex of the 32 raw public key bytes."""
        return self._key_id

    @property
    def raw(self) -> bytes:
        """The 32 raw public key bytes."""
        return self._key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    def to_pem(self) -> bytes:
        """SubjectPublicKeyInfo PEM text."""
        return self._key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the PEM file (mode 0644); refuses to overwrite unless ``overwrite``."""
        file = Path(path)
        _write_key_file(file, self.to_pem(), mode=0o644, overwrite=overwrite, what="public key")
        return file

    def verify(self, signature: bytes, data: bytes) -> bool:
        """True iff ``signature`` is this key's Ed25519 signature over ``data``."""
        if len(signature) != SIGNATURE_BYTES:
            return False
        try:
            self._key.verify(signature, data)
        except InvalidSignature:
            return False
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VerifyingKey) and other._key_id == self._key_id

    def __hash__(self) -> int:
        return hash(self._key_id)

    def __repr__(self) -> str:
        return f"VerifyingKey(key_id={self._key_id[:16]}...)"


class SigningKey:
    """An Ed25519 private key; never printed, only its key id is shown."""

    __slots__ = ("_key", "_public")

    def __init__(self, key: Ed25519PrivateKey) -> None:
        self._key = key
        self._public = VerifyingKey(key.public_key())

    @classmethod
    def generate(cls) -> SigningKey:
        """A fresh random key."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_pem(cls, data: bytes, *, password: bytes | None = None) -> SigningKey:
        """A key from PKCS#8 PEM text (``password`` if it is encrypted)."""
        if len(data) > MAX_KEY_FILE_BYTES:
            raise SigningKeyError(f"private key PEM is over {MAX_KEY_FILE_BYTES} bytes")
        if b"PRIVATE KEY" not in data and b"PUBLIC KEY" in data:
            raise SigningKeyError("this is a public key; signing needs the private key file")
        try:
            key = serialization.load_pem_private_key(data, password=password)
        except TypeError as exc:
            # cryptography says TypeError when a password is missing or superfluous.
            raise SigningKeyError(f"private key password problem: {exc}") from exc
        except (ValueError, UnsupportedAlgorithm) as exc:
            raise SigningKeyError(f"not a PEM private key (or a wrong password): {exc}") from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise SigningKeyError(
                f"expected an Ed25519 private key, got {type(key).__name__.lstrip('_')}"
            )
        return cls(key)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, password: bytes | None = None) -> SigningKey:
        """Read a private key PEM file (at most :data:`MAX_KEY_FILE_BYTES`)."""
        file = Path(path)
        data = _read_key_file(file, "private key file")
        try:
            return cls.from_pem(data, password=password)
        except SigningKeyError as exc:
            raise SigningKeyError(f"{file}: {exc}") from exc

    @property
    def verifying_key(self) -> VerifyingKey:
        """The matching public key."""
        return self._public

    @property
    def key_id(self) -> str:
        """The key id of the matching public key."""
        return self._public.key_id

    def to_pem(self, *, password: bytes | None = None) -> bytes:
        """PKCS#8 PEM text, encrypted when ``password`` is given."""
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password)
            if password
            else serialization.NoEncryption()
        )
        return self._key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )

    def save(
        self,
        path: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        password: bytes | None = None,
    ) -> Path:
        """Write the PEM file with mode 0600; refuses to overwrite unless ``overwrite``."""
        file = Path(path)
        _write_key_file(
            file,
            self.to_pem(password=password),
            mode=PRIVATE_KEY_MODE,
            overwrite=overwrite,
            what="private key",
        )
        return file

    def sign(self, data: bytes) -> bytes:
        """The 64-byte Ed25519 signature over ``data``."""
        return self._key.sign(data)

    def __repr__(self) -> str:
        return f"SigningKey(key_id={self.key_id[:16]}...)"
