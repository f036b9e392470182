"""Small builders for the SPL Token and Associated Token Account instructions the world uses.

Byte layouts (every integer little-endian; the first byte of a Token
instruction is its tag):

- ``InitializeMint2`` (tag 20): ``[20, decimals:u8, mint_authority:32, freeze_option:u8,
  freeze_authority:32]`` (option 0 = no freeze authority, then 32 zero bytes: the fixed
  layout the ``solana`` package's ``spl.token`` builder writes); accounts: mint (writable).
- ``MintTo`` (tag 7): ``[7, amount:u64]``; accounts: mint (writable),
  destination (writable), mint authority (signer).
- ``Transfer`` (tag 3): ``[3, amount:u64]``; accounts: source (writable),
  destination (writable), owner (signer).
- ``TransferChecked`` (tag 12): ``[12, amount:u64, decimals:u8]``; accounts:
  source (writable), mint, destination (writable), owner (signer).
- Associated Token Account ``CreateIdempotent``: data ``[1]``; accounts: payer
  (writable signer), associated account (writable), wallet owner, mint, the
  System program, the Token program. The associated address is the program
  address derived from ``[owner, token program id, mint]``.

Account layouts read back: a token account is 165 bytes with the mint at
0..32, the owner at 32..64 and the amount (u64) at 64..72; a mint is 82 bytes
with the supply (u64) at 36..44 and the decimals at 44.
"""

from __future__ import annotations

import struct

from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey

__all__ = [
    "ASSOCIATED_TOKEN_PROGRAM_ID",
    "MINT_SIZE",
    "SYSTEM_PROGRAM_ID",
    "TOKEN_ACCOUNT_SIZE",
    "TOKEN_PROGRAM_ID",
    "associated_token_address",
    "create_associated_token_account",
    "initialize_mint",
    "mint_supply",
    "mint_to",
    "token_amount",
    "transfer",
    "transfer_checked",
]

TOKEN_PROGRAM_ID = Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
ASSOCIATED_TOKEN_PROGRAM_ID = Pubkey.from_string("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL")
SYSTEM_PROGRAM_ID = Pubkey.from_string("11111111111111111111111111111111")
MINT_SIZE = 82
TOKEN_ACCOUNT_SIZE = 165

_U64 = struct.Struct("<Q")
_MAX_U64 = (1 << 64) - 1


def _amount(value: int) -> bytes:
    if not 0 <= value <= _MAX_U64:
        raise ValueError(f"token amount {value} does not fit in a u64")
    return _U64.pack(value)


def initialize_mint(
    mint: Pubkey, decimals: int, authority: Pubkey, freeze_authority: Pubkey | None = None
) -> Instruction:
    """``InitializeMint2``; without a freeze authority the option is 0 and its 32 bytes are zero."""
    if not 0 <= decimals <= 255:
        raise ValueError("decimals must fit in a u8")
    freeze = b"\x01" + bytes(freeze_authority) if freeze_authority is not None else bytes(33)
    data = bytes([20, decimals]) + bytes(authority) + freeze
    return Instruction(TOKEN_PROGRAM_ID, data, [AccountMeta(mint, False, True)])


def mint_to(mint: Pubkey, destination: Pubkey, authority: Pubkey, amount: int) -> Instruction:
    """``MintTo``: create ``amount`` base units into ``destination``."""
    return Instruction(
        TOKEN_PROGRAM_ID,
        b"\x07" + _amount(amount),
        [
            AccountMeta(mint, False, True),
            AccountMeta(destination, False, True),
            AccountMeta(authority, True, False),
        ],
    )


def transfer(source: Pubkey, destination: Pubkey, owner: Pubkey, amount: int) -> Instruction:
    """``Transfer`` (unchecked): move ``amount`` base units."""
    return Instruction(
        TOKEN_PROGRAM_ID,
        b"\x03" + _amount(amount),
        [
            AccountMeta(source, False, True),
            AccountMeta(destination, False, True),
            AccountMeta(owner, True, False),
        ],
    )


def transfer_checked(
    source: Pubkey, mint: Pubkey, destination: Pubkey, owner: Pubkey, amount: int, decimals: int
) -> Instruction:
    """``TransferChecked``: move ``amount`` base units; the program checks mint and decimals."""
    return Instruction(
        TOKEN_PROGRAM_ID,
        b"\x0c" + _amount(amount) + bytes([decimals]),
        [
            AccountMeta(source, False, True),
            AccountMeta(mint, False, False),
            AccountMeta(destination, False, True),
            AccountMeta(owner, True, False),
        ],
    )


def associated_token_address(owner: Pubkey, mint: Pubkey) -> Pubkey:
    """The associated token account of ``owner`` for ``mint``."""
    address, _bump = Pubkey.find_program_address(
        [bytes(owner), bytes(TOKEN_PROGRAM_ID), bytes(mint)], ASSOCIATED_TOKEN_PROGRAM_ID
    )
    return address


def create_associated_token_account(payer: Pubkey, owner: Pubkey, mint: Pubkey) -> Instruction:
    """``CreateIdempotent`` of the associated token account of ``owner`` for ``mint``."""
    return Instruction(
        ASSOCIATED_TOKEN_PROGRAM_ID,
        b"\x01",
        [
            AccountMeta(payer, True, True),
            AccountMeta(associated_token_address(owner, mint), False, True),
            AccountMeta(owner, False, False),
            AccountMeta(mint, False, False),
            AccountMeta(SYSTEM_PROGRAM_ID, False, False),
            AccountMeta(TOKEN_PROGRAM_ID, False, False),
        ],
    )


def token_amount(data: bytes) -> int:
    """The amount held by a token account, read from its data."""
    if len(data) < TOKEN_ACCOUNT_SIZE:
        raise ValueError("not a token account")
    return int(_U64.unpack_from(data, 64)[0])


def mint_supply(data: bytes) -> int:
    """The supply of a mint, read from its data."""
    if len(data) < MINT_SIZE:
        raise ValueError("not a mint account")
    return int(_U64.unpack_from(data, 36)[0])
