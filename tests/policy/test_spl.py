"""The SPL instruction builders: exact byte layouts, and the on-chain programs accept them."""

import struct

import pytest

pytest.importorskip("solders", reason="the Solana world needs the solana extra")

from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import Transaction
from solders.transaction_metadata import FailedTransactionMetadata

from playproof.policy import spl

A = Pubkey(bytes(range(32)))
B = Pubkey(bytes(range(32, 64)))
C = Pubkey(bytes(range(64, 96)))
D = Pubkey(bytes(range(96, 128)))


def test_byte_layouts() -> None:
    assert bytes(spl.initialize_mint(A, 6, B).data) == bytes([20, 6]) + bytes(B) + bytes(33)
    frozen = spl.initialize_mint(A, 6, B, freeze_authority=C)
    assert bytes(frozen.data) == bytes([20, 6]) + bytes(B) + b"\x01" + bytes(C)
    assert bytes(spl.mint_to(A, B, C, 258).data) == b"\x07" + (258).to_bytes(8, "little")
    assert bytes(spl.transfer(A, B, C, 7).data) == b"\x03" + struct.pack("<Q", 7)
    checked = spl.transfer_checked(A, B, C, D, 2**64 - 1, 9)
    assert bytes(checked.data) == b"\x0c" + b"\xff" * 8 + b"\x09"
    assert [(m.pubkey, m.is_signer, m.is_writable) for m in checked.accounts] == [
        (A, False, True),
        (B, False, False),
        (C, False, True),
        (D, True, False),
    ]
    ata = spl.create_associated_token_account(A, B, C)
    assert bytes(ata.data) == b"\x01"
    assert ata.program_id == spl.ASSOCIATED_TOKEN_PROGRAM_ID
    assert ata.accounts[1].pubkey == spl.associated_token_address(B, C)
    assert [m.pubkey for m in ata.accounts[4:]] == [spl.SYSTEM_PROGRAM_ID, spl.TOKEN_PROGRAM_ID]


def test_amounts_must_fit_a_u64() -> None:
    with pytest.raises(ValueError, match="u64"):
        spl.transfer(A, B, C, 2**64)
    with pytest.raises(ValueError, match="u64"):
        spl.mint_to(A, B, C, -1)


class _Chain:
    def __init__(self) -> None:
        self.svm = LiteSVM()
        self.payer = Keypair.from_seed(bytes([1] * 32))
        self.svm.airdrop(self.payer.pubkey(), 10**10)

    def send(self, instructions: list, *signers: Keypair) -> bool:
        tx = Transaction(
            [self.payer, *signers],
            Message(instructions, self.payer.pubkey()),
            self.svm.latest_blockhash(),
        )
        result = self.svm.send_transaction(tx)
        self.svm.expire_blockhash()
        return not isinstance(result, FailedTransactionMetadata)

    def amount(self, address: Pubkey) -> int:
        account = self.svm.get_account(address)
        assert account is not None
        return spl.token_amount(bytes(account.data))


def test_the_token_program_runs_what_the_builders_make() -> None:
    chain = _Chain()
    payer = chain.payer.pubkey()
    mint = Keypair.from_seed(bytes([2] * 32))
    rent = chain.svm.minimum_balance_for_rent_exemption(spl.MINT_SIZE)
    params = CreateAccountParams(
        from_pubkey=payer,
        to_pubkey=mint.pubkey(),
        lamports=rent,
        space=spl.MINT_SIZE,
        owner=spl.TOKEN_PROGRAM_ID,
    )
    assert chain.send([create_account(params), spl.initialize_mint(mint.pubkey(), 3, payer)], mint)
    other = Keypair.from_seed(bytes([3] * 32)).pubkey()
    mine = spl.associated_token_address(payer, mint.pubkey())
    theirs = spl.associated_token_address(other, mint.pubkey())
    assert chain.send(
        [
            spl.create_associated_token_account(payer, payer, mint.pubkey()),
            spl.create_associated_token_account(payer, other, mint.pubkey()),
            spl.mint_to(mint.pubkey(), mine, payer, 5_000),
        ]
    )
    supply = chain.svm.get_account(mint.pubkey())
    assert supply is not None
    assert spl.mint_supply(bytes(supply.data)) == 5_000
    assert chain.send([spl.transfer(mine, theirs, payer, 1_000)])
    assert chain.send([spl.transfer_checked(mine, mint.pubkey(), theirs, payer, 500, 3)])
    assert (chain.amount(mine), chain.amount(theirs)) == (3_500, 1_500)
    # Bad instructions fail and move nothing: wrong decimals, overdraft, wrong owner.
    assert not chain.send([spl.transfer_checked(mine, mint.pubkey(), theirs, payer, 1, 4)])
    assert not chain.send([spl.transfer(mine, theirs, payer, 3_501)])
    assert not chain.send([spl.transfer(theirs, mine, payer, 1)])
    # Creating an associated account again is idempotent.
    assert chain.send([spl.create_associated_token_account(payer, other, mint.pubkey())])
    assert (chain.amount(mine), chain.amount(theirs)) == (3_500, 1_500)
