"""Ed25519 key files: round trips, permissions, refusals, and wrong kinds of key."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from playproof.errors import SigningKeyError
from playproof.sign import MAX_KEY_FILE_BYTES, SigningKey, VerifyingKey


def test_private_key_round_trip_keeps_key_and_id(tmp_path: Path, key: SigningKey) -> None:
    path = key.save(tmp_path / "run.key")
    loaded = SigningKey.load(path)
    assert loaded.key_id == key.key_id
    assert key.verifying_key.verify(loaded.sign(b"msg"), b"msg")


def test_private_key_file_is_0600_pkcs8(tmp_path: Path, key: SigningKey) -> None:
    path = key.save(tmp_path / "run.key")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")


def test_overwrite_is_refused_unless_asked(tmp_path: Path, key: SigningKey) -> None:
    path = tmp_path / "run.key"
    path.write_bytes(b"precious")
    with pytest.raises(SigningKeyError, match="refusing to overwrite"):
        key.save(path)
    assert path.read_bytes() == b"precious"
    path.chmod(0o644)
    key.save(path, overwrite=True)
    assert SigningKey.load(path).key_id == key.key_id
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["run.key"]


def test_public_key_round_trip_and_refusal(tmp_path: Path, key: SigningKey) -> None:
    path = key.verifying_key.save(tmp_path / "run.pub.pem")
    loaded = VerifyingKey.load(path)
    assert loaded == key.verifying_key
    assert loaded.raw == key.verifying_key.raw
    with pytest.raises(SigningKeyError, match="refusing to overwrite"):
        key.verifying_key.save(path)


def test_key_id_is_sha256_of_raw_public_key(key: SigningKey) -> None:
    raw = key.verifying_key.raw
    assert len(raw) == 32
    assert key.key_id == hashlib.sha256(raw).hexdigest()
    assert VerifyingKey.from_raw(raw).key_id == key.key_id


def test_password_protected_key(tmp_path: Path, key: SigningKey) -> None:
    path = key.save(tmp_path / "enc.key", password=b"correct horse")
    assert SigningKey.load(path, password=b"correct horse").key_id == key.key_id
    with pytest.raises(SigningKeyError):
        SigningKey.load(path)
    with pytest.raises(SigningKeyError):
        SigningKey.load(path, password=b"wrong")


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"garbage",
        b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        b"\xff" * 100,
    ],
)
def test_garbage_is_a_signing_key_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.key"
    path.write_bytes(content)
    with pytest.raises(SigningKeyError):
        SigningKey.load(path)
    with pytest.raises(SigningKeyError):
        VerifyingKey.load(path)


def _foreign_keys() -> list[tuple[str, bytes, bytes]]:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    out = []
    for name, private in (("rsa", rsa_key), ("ec", ec_key)):
        pem = private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        pub = private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        out.append((name, pem, pub))
    return out


@pytest.mark.parametrize(("name", "private_pem", "public_pem"), _foreign_keys())
def test_non_ed25519_keys_are_refused(
    tmp_path: Path, name: str, private_pem: bytes, public_pem: bytes
) -> None:
    (tmp_path / "k").write_bytes(private_pem)
    (tmp_path / "k.pub").write_bytes(public_pem)
    with pytest.raises(SigningKeyError, match="expected an Ed25519 private key"):
        SigningKey.load(tmp_path / "k")
    with pytest.raises(SigningKeyError, match="expected an Ed25519 public key"):
        VerifyingKey.load(tmp_path / "k.pub")


def test_wrong_kind_of_key_file(tmp_path: Path, key: SigningKey) -> None:
    private = key.save(tmp_path / "k")
    public = key.verifying_key.save(tmp_path / "k.pub")
    with pytest.raises(SigningKeyError, match="public key"):
        SigningKey.load(public)
    with pytest.raises(SigningKeyError, match="private key"):
        VerifyingKey.load(private)


def test_oversized_and_missing_files(tmp_path: Path) -> None:
    big = tmp_path / "big.key"
    big.write_bytes(b"A" * (MAX_KEY_FILE_BYTES + 1))
    with pytest.raises(SigningKeyError, match="over"):
        SigningKey.load(big)
    with pytest.raises(SigningKeyError, match="cannot read"):
        SigningKey.load(tmp_path / "absent.key")
    with pytest.raises(SigningKeyError, match="32 bytes"):
        VerifyingKey.from_raw(b"\x00" * 31)


def test_repr_shows_only_the_key_id(key: SigningKey) -> None:
    text = repr(key)
    assert key.key_id[:16] in text
    assert "PRIVATE" not in text


def test_verify_rejects_wrong_signatures(key: SigningKey, other_key: SigningKey) -> None:
    sig = key.sign(b"data")
    public = key.verifying_key
    assert public.verify(sig, b"data")
    assert not public.verify(sig, b"Data")
    assert not public.verify(other_key.sign(b"data"), b"data")
    assert not public.verify(sig[:-1], b"data")
    assert not public.verify(sig + b"\x00", b"data")
