"""DSSE: the pre-authentication encoding, base64 rules and envelope round trips."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from playproof.errors import FormatError
from playproof.sign import Envelope, EnvelopeSignature, SigningKey, pae, parse_envelope
from playproof.sign._dsse import MAX_ENVELOPE_BYTES, b64decode, sign_payload, signing_key_id


def test_pae_matches_the_spec_example() -> None:
    # The worked example of the DSSE protocol document.
    expected = b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    assert pae("http://example.com/HelloWorld", b"hello world") == expected
    assert expected.hex().startswith("44535345763120323920")


def test_pae_lengths_are_bytes_not_characters() -> None:
    assert pae("é", b"") == b"DSSEv1 2 \xc3\xa9 0 "


def _decode_pae(data: bytes) -> tuple[str, bytes]:
    """Read a PAE back unambiguously: the lengths say where each part ends."""
    prefix, rest = data[:7], data[7:]
    assert prefix == b"DSSEv1 "
    type_len, rest = rest.split(b" ", 1)
    payload_type, rest = rest[: int(type_len)], rest[int(type_len) :]
    assert rest[:1] == b" "
    body_len, body = rest[1:].split(b" ", 1)
    assert len(body) == int(body_len)
    return payload_type.decode("utf-8"), body


@given(st.text(max_size=40), st.binary(max_size=80))
def test_pae_decodes_back_to_its_inputs(payload_type: str, body: bytes) -> None:
    assert _decode_pae(pae(payload_type, body)) == (payload_type, body)


@given(st.text(max_size=20), st.binary(max_size=40), st.text(max_size=20), st.binary(max_size=40))
def test_pae_is_injective(type_a: str, body_a: bytes, type_b: str, body_b: bytes) -> None:
    if (type_a, body_a) != (type_b, body_b):
        assert pae(type_a, body_a) != pae(type_b, body_b)


@given(st.binary(max_size=200))
def test_b64decode_accepts_standard_and_url_safe_with_or_without_padding(data: bytes) -> None:
    std = base64.b64encode(data).decode()
    url = base64.urlsafe_b64encode(data).decode()
    for text in (std, url, std.rstrip("="), url.rstrip("=")):
        assert b64decode(text) == data


@pytest.mark.parametrize("text", ["a", "ab!c", "é===", "YWJj\n", "YW Jj", "====", "Y==="])
def test_b64decode_refuses_garbage(text: str) -> None:
    with pytest.raises(FormatError):
        b64decode(text)


_signatures = st.lists(
    st.builds(
        EnvelopeSignature,
        keyid=st.text(max_size=70),
        sig=st.binary(min_size=1, max_size=70).map(lambda b: base64.b64encode(b).decode()),
    ),
    min_size=1,
    max_size=4,
)


@given(st.binary(max_size=500), st.text(min_size=1, max_size=60), _signatures)
def test_envelope_round_trips_through_json(
    payload: bytes, payload_type: str, signatures: list[EnvelopeSignature]
) -> None:
    envelope = Envelope(
        payload=base64.b64encode(payload).decode(),
        payloadType=payload_type,
        signatures=tuple(signatures),
    )
    again = parse_envelope(envelope.to_bytes())
    assert again == envelope
    assert again.payload_bytes() == payload
    assert parse_envelope(envelope.to_bytes().decode()) == envelope
    assert parse_envelope(json.loads(envelope.to_bytes())) == envelope


def test_envelope_json_uses_the_dsse_field_names(key: SigningKey) -> None:
    envelope = sign_payload("text/plain", b"hi", [key])
    doc = json.loads(envelope.to_bytes())
    assert set(doc) == {"payload", "payloadType", "signatures"}
    assert set(doc["signatures"][0]) == {"keyid", "sig"}
    assert doc["signatures"][0]["keyid"] == key.key_id
    assert len(base64.b64decode(doc["signatures"][0]["sig"])) == 64
    assert key.verifying_key.verify(
        base64.b64decode(doc["signatures"][0]["sig"]), pae("text/plain", b"hi")
    )


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {},
        "",
        b"{",
        "[1,2]",
        '{"payload":"aGk=","payloadType":"t","signatures":[]}',
        '{"payload":"aGk=","payloadType":"t"}',
        '{"payload":1,"payloadType":"t","signatures":[{"sig":"AA=="}]}',
        '{"payload":"aGk=","payloadType":"t","signatures":[{"sig":"AA=="}],"extra":1}',
        '{"payload":"aGk=","payload":"aGk=","payloadType":"t","signatures":[{"sig":"AA=="}]}',
        '{"payload":NaN}',
        "[" * 100_000,
    ],
)
def test_parse_envelope_raises_only_format_error(data: object) -> None:
    with pytest.raises(FormatError):
        parse_envelope(data)


def test_parse_envelope_bounds_the_input_before_parsing() -> None:
    with pytest.raises(FormatError, match="limit"):
        parse_envelope(" " * (MAX_ENVELOPE_BYTES + 1))
    with pytest.raises(FormatError, match="limit"):
        parse_envelope(b" " * (MAX_ENVELOPE_BYTES + 1))


def test_signing_key_id_needs_a_trusted_key_and_a_valid_signature(
    key: SigningKey, other_key: SigningKey
) -> None:
    envelope = sign_payload("text/plain", b"hi", [other_key, key])
    assert signing_key_id(envelope, [key.verifying_key])[0] == key.key_id
    assert signing_key_id(envelope, [])[1] == "no trusted key given"
    only_other = sign_payload("text/plain", b"hi", [other_key])
    key_id, reason = signing_key_id(only_other, [key.verifying_key])
    assert key_id is None
    assert "not trusted" in reason


def test_a_payload_over_the_bound_is_refused_in_python_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The payload bound is read when checked: lowering the constant lowers the bound."""
    from pydantic import ValidationError

    import playproof.sign._dsse as dsse

    signature = EnvelopeSignature(keyid="k", sig="c2ln")
    Envelope(payload="eA==", payloadType="t", signatures=(signature,))
    monkeypatch.setattr(dsse, "MAX_PAYLOAD_CHARS", 3)
    with pytest.raises(ValidationError, match="over 3 characters"):
        Envelope(payload="eA==", payloadType="t", signatures=(signature,))
    with pytest.raises(FormatError, match="over 3 characters"):
        parse_envelope({"payload": "eA==", "payloadType": "t", "signatures": [{"sig": "c2ln"}]})
