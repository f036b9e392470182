"""Our SPL builders write the same instructions as the ``solana`` package's ``spl.token`` builders.

Byte for byte: the instruction data, the account list (address, signer and
writable flags, in order) and the program id, over generated keys, amounts
and decimals. The ``solana`` package is a test dependency only.
"""

import pytest

pytest.importorskip("solders", reason="the Solana world needs the solana extra")
pytest.importorskip("spl.token", reason="the reference builders come with the test extra (solana)")

from hypothesis import given, settings
from hypothesis import strategies as st
from solders.instruction import Instruction
from solders.pubkey import Pubkey
from spl.token import instructions as reference
from spl.token import models
from spl.token.constants import ASSOCIATED_TOKEN_PROGRAM_ID, TOKEN_PROGRAM_ID

from playproof.policy import spl

keys = st.binary(min_size=32, max_size=32).map(Pubkey)
amounts = st.integers(min_value=0, max_value=2**64 - 1)
decimals = st.integers(min_value=0, max_value=255)


def _same(ours: Instruction, theirs: Instruction) -> None:
    assert ours.program_id == theirs.program_id
    assert bytes(ours.data) == bytes(theirs.data)
    assert [(a.pubkey, a.is_signer, a.is_writable) for a in ours.accounts] == [
        (a.pubkey, a.is_signer, a.is_writable) for a in theirs.accounts
    ]
    assert bytes(ours) == bytes(theirs)


def test_program_ids_match() -> None:
    assert spl.TOKEN_PROGRAM_ID == TOKEN_PROGRAM_ID
    assert spl.ASSOCIATED_TOKEN_PROGRAM_ID == ASSOCIATED_TOKEN_PROGRAM_ID


@settings(max_examples=100, deadline=None)
@given(mint=keys, authority=keys, freeze=st.none() | keys, places=decimals)
def test_initialize_mint2(
    mint: Pubkey, authority: Pubkey, freeze: Pubkey | None, places: int
) -> None:
    theirs = reference.initialize_mint2(
        models.InitializeMint2Params(
            decimals=places,
            program_id=TOKEN_PROGRAM_ID,
            mint=mint,
            mint_authority=authority,
            freeze_authority=freeze,
        )
    )
    _same(spl.initialize_mint(mint, places, authority, freeze_authority=freeze), theirs)


@settings(max_examples=100, deadline=None)
@given(mint=keys, dest=keys, authority=keys, amount=amounts)
def test_mint_to(mint: Pubkey, dest: Pubkey, authority: Pubkey, amount: int) -> None:
    theirs = reference.mint_to(
        models.MintToParams(
            program_id=TOKEN_PROGRAM_ID,
            mint=mint,
            dest=dest,
            mint_authority=authority,
            amount=amount,
        )
    )
    _same(spl.mint_to(mint, dest, authority, amount), theirs)


@settings(max_examples=100, deadline=None)
@given(source=keys, dest=keys, owner=keys, amount=amounts)
def test_transfer(source: Pubkey, dest: Pubkey, owner: Pubkey, amount: int) -> None:
    theirs = reference.transfer(
        models.TransferParams(
            program_id=TOKEN_PROGRAM_ID, source=source, dest=dest, owner=owner, amount=amount
        )
    )
    _same(spl.transfer(source, dest, owner, amount), theirs)


@settings(max_examples=100, deadline=None)
@given(source=keys, mint=keys, dest=keys, owner=keys, amount=amounts, places=decimals)
def test_transfer_checked(
    source: Pubkey, mint: Pubkey, dest: Pubkey, owner: Pubkey, amount: int, places: int
) -> None:
    theirs = reference.transfer_checked(
        models.TransferCheckedParams(
            program_id=TOKEN_PROGRAM_ID,
            source=source,
            mint=mint,
            dest=dest,
            owner=owner,
            amount=amount,
            decimals=places,
        )
    )
    _same(spl.transfer_checked(source, mint, dest, owner, amount, places), theirs)


@settings(max_examples=50, deadline=None)
@given(owner=keys, mint=keys)
def test_associated_token_address(owner: Pubkey, mint: Pubkey) -> None:
    assert spl.associated_token_address(owner, mint) == reference.get_associated_token_address(
        owner, mint
    )


@settings(max_examples=50, deadline=None)
@given(payer=keys, owner=keys, mint=keys)
def test_create_associated_token_account_idempotent(
    payer: Pubkey, owner: Pubkey, mint: Pubkey
) -> None:
    theirs = reference.create_idempotent_associated_token_account(payer, owner, mint)
    _same(spl.create_associated_token_account(payer, owner, mint), theirs)
