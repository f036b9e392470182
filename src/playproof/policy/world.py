"""A deterministic local Solana world: LiteSVM in-process, a hosted wallet and a market maker.

Everything is fixed by constants and the run seed: keypairs come from fixed
seeds, the clock is set by the world (never read from the machine), the
blockhash advances by LiteSVM's own deterministic rule after each transaction,
and prices follow a SplitMix64 random walk seeded by the run seed, one step
per world second. The same seed and actions give byte-identical accounts in
any process (:meth:`SwapWorld.state_digest`).

A swap is one transaction of two ``TransferChecked`` instructions (the wallet
pays the market maker, the market maker pays the wallet); if either leg fails
the runtime reverts both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from solders.clock import Clock
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import Transaction
from solders.transaction_metadata import FailedTransactionMetadata

from playproof.policy import spl

__all__ = [
    "EPOCH_UNIX",
    "LAMPORTS_PER_SOL",
    "TOKENS",
    "SwapWorld",
    "TokenSpec",
    "TxResult",
    "fixed_keypair",
    "runtime_programs_digest",
]

LAMPORTS_PER_SOL = 1_000_000_000
EPOCH_UNIX = 1_767_225_600
"""The world clock's second 0 (a fixed Unix time; the machine clock is never read)."""
_SLOT0 = 1_000
_MASK = (1 << 64) - 1
PRICE_STEP_BPS = 5
"""The largest move of a price in one world second, in basis points."""


@dataclass(frozen=True, slots=True)
class TokenSpec:
    """A test SPL token of the world: symbol, decimals, start price, holdings."""

    symbol: str
    decimals: int
    price_nano_usd: int
    """Start price of one whole token, in billionths of a USD."""
    wallet_units: int
    """Whole tokens the hosted wallet starts with."""
    maker_units: int
    """Whole tokens the market maker starts with (its inventory)."""


TOKENS: tuple[TokenSpec, ...] = (
    TokenSpec("USDC", 6, 1_000_000_000, 10_000, 1_000_000),
    TokenSpec("JUP", 6, 800_000_000, 0, 1_000_000),
    TokenSpec("BONK", 5, 20_000, 1_000_000, 10_000_000_000),
    TokenSpec("RUG", 6, 50_000_000, 0, 50),
)
"""The world's tokens. ``RUG`` exists on chain but no shipped envelope allows it."""


def fixed_keypair(label: str) -> Keypair:
    """The keypair whose seed is SHA-256 of a fixed label."""
    return Keypair.from_seed(hashlib.sha256(f"playproof/solana/{label}".encode()).digest())


def _splitmix(state: int) -> tuple[int, int]:
    state = (state + 0x9E3779B97F4A7C15) & _MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return state, z ^ (z >> 31)


@dataclass(frozen=True, slots=True)
class TxResult:
    """One transaction: its signature (base58), whether it landed, and the error if not."""

    signature: str
    ok: bool
    error: str


def _program_data(svm: LiteSVM, program: Pubkey) -> bytes:
    account = svm.get_account(program)
    if account is None:
        return b""
    data = bytes(account.data)
    if len(data) == 36:  # upgradeable loader: the program account points at its data
        target = svm.get_account(Pubkey.from_bytes(data[4:36]))
        return bytes(target.data) if target is not None else b""
    return data


@cache
def runtime_programs_digest() -> str:
    """SHA-256 of the SPL Token and Associated Token Account programs the runtime loads."""
    svm = LiteSVM()
    h = hashlib.sha256()
    for program in (spl.TOKEN_PROGRAM_ID, spl.ASSOCIATED_TOKEN_PROGRAM_ID):
        data = _program_data(svm, program)
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class SwapWorld:
    """The world of one run; built by :meth:`open`, never touched by the machine clock."""

    def __init__(self, seed: int, tokens: Sequence[TokenSpec] = TOKENS) -> None:
        self.seed = seed
        self.tokens = {t.symbol: t for t in tokens}
        self.svm = LiteSVM()
        self.second = 0
        self._set_clock()
        self.authority = fixed_keypair("authority")
        self.maker = fixed_keypair("maker")
        self.wallet_key = fixed_keypair("wallet")
        self.mints = {t.symbol: fixed_keypair(f"mint/{t.symbol}") for t in tokens}
        # Deriving a public key or an associated address is slow in solders; each is done once.
        self.authority_pubkey = self.authority.pubkey()
        self.maker_pubkey = self.maker.pubkey()
        self.mint_pubkeys = {symbol: key.pubkey() for symbol, key in self.mints.items()}
        self._atas: dict[tuple[Pubkey, str], Pubkey] = {}
        self._payers: dict[int, Pubkey] = {}
        # Reads of the wallet and of the whole state, kept until the next transaction or airdrop
        # (accounts change only through this object's own writes).
        self._held: dict[str, int] | None = None
        self._digest: str | None = None
        self.wallet: Pubkey | None = None
        self._prices: list[dict[str, int]] = [{t.symbol: t.price_nano_usd for t in tokens}]
        self._rng = seed & _MASK
        self.svm.airdrop(self.authority_pubkey, 1_000 * LAMPORTS_PER_SOL)
        self.svm.airdrop(self.maker_pubkey, 10 * LAMPORTS_PER_SOL)
        rent = self.svm.minimum_balance_for_rent_exemption(spl.MINT_SIZE)
        for token in tokens:
            mint = self.mint_pubkeys[token.symbol]
            self._send(
                [
                    create_account(
                        CreateAccountParams(
                            from_pubkey=self.authority_pubkey,
                            to_pubkey=mint,
                            lamports=rent,
                            space=spl.MINT_SIZE,
                            owner=spl.TOKEN_PROGRAM_ID,
                        )
                    ),
                    spl.initialize_mint(mint, token.decimals, self.authority_pubkey),
                ],
                [self.authority, self.mints[token.symbol]],
                require=True,
            )
        self._fund(self.maker_pubkey, {t.symbol: t.maker_units for t in tokens})

    # -- setup -------------------------------------------------------------------------

    def _set_clock(self) -> None:
        self.svm.set_clock(
            Clock(
                slot=_SLOT0 + self.second * 2,
                epoch_start_timestamp=EPOCH_UNIX,
                epoch=0,
                leader_schedule_epoch=0,
                unix_timestamp=EPOCH_UNIX + self.second,
            )
        )

    def _fund(self, owner: Pubkey, units: Mapping[str, int]) -> None:
        for symbol, whole in units.items():
            mint = self.mint_pubkeys[symbol]
            amount = whole * 10 ** self.tokens[symbol].decimals
            instructions = [spl.create_associated_token_account(self.authority_pubkey, owner, mint)]
            if amount:
                instructions.append(
                    spl.mint_to(
                        mint,
                        self.token_account(owner, symbol),
                        self.authority_pubkey,
                        amount,
                    )
                )
            self._send(instructions, [self.authority], require=True)

    def open_wallet(self, lamports: int = 10 * LAMPORTS_PER_SOL) -> Pubkey:
        """Create the hosted wallet: SOL for fees and the start holdings of every token."""
        owner = self.wallet_key.pubkey()
        self._changed()
        self.svm.airdrop(owner, lamports)
        self._fund(owner, {t.symbol: t.wallet_units for t in self.tokens.values()})
        self.wallet = owner
        return owner

    # -- transactions ------------------------------------------------------------------

    def _send(
        self, instructions: Sequence[Instruction], signers: Sequence[Keypair], *, require: bool
    ) -> TxResult:
        payer = self._payers.get(id(signers[0]))
        if payer is None:
            payer = self._payers[id(signers[0])] = signers[0].pubkey()
        message = Message(list(instructions), payer)
        tx = Transaction(list(signers), message, self.svm.latest_blockhash())
        signature = str(tx.signatures[0])
        self._changed()
        result = self.svm.send_transaction(tx)
        # A fresh blockhash per transaction: two identical swaps stay two transactions.
        self.svm.expire_blockhash()
        if isinstance(result, FailedTransactionMetadata):
            if require:
                raise RuntimeError(f"world setup transaction failed: {result.err()}")
            return TxResult(signature, False, str(result.err()))
        return TxResult(signature, True, "")

    def swap(self, sell: str, buy: str, sell_amount: int, buy_amount: int) -> TxResult:
        """One atomic transaction: ``sell_amount`` to the maker, ``buy_amount`` to the wallet."""
        if self.wallet is None:
            raise RuntimeError("the hosted wallet does not exist")
        sell_mint, buy_mint = self.mint_pubkeys[sell], self.mint_pubkeys[buy]
        wallet, maker = self.wallet, self.maker_pubkey
        legs = [
            spl.transfer_checked(
                self.token_account(wallet, sell),
                sell_mint,
                self.token_account(maker, sell),
                wallet,
                sell_amount,
                self.tokens[sell].decimals,
            ),
            spl.transfer_checked(
                self.token_account(maker, buy),
                buy_mint,
                self.token_account(wallet, buy),
                maker,
                buy_amount,
                self.tokens[buy].decimals,
            ),
        ]
        return self._send(legs, [self.wallet_key, self.maker], require=False)

    # -- reads -------------------------------------------------------------------------

    def token_account(self, owner: Pubkey, symbol: str) -> Pubkey:
        """The associated token account of ``owner`` for ``symbol`` (derived once, then kept)."""
        key = (owner, symbol)
        found = self._atas.get(key)
        if found is None:
            found = spl.associated_token_address(owner, self.mint_pubkeys[symbol])
            self._atas[key] = found
        return found

    def balance(self, owner: Pubkey, symbol: str) -> int:
        """Base units of ``symbol`` held by ``owner`` (0 without an account)."""
        account = self.svm.get_account(self.token_account(owner, symbol))
        return 0 if account is None else spl.token_amount(bytes(account.data))

    def _changed(self) -> None:
        self._held = None
        self._digest = None

    def balances(self, owner: Pubkey | None = None) -> dict[str, int]:
        """Base units of every token held by ``owner`` (the wallet by default), plus lamports."""
        who = owner if owner is not None else self.wallet
        if who is None:
            return {}
        mine = who == self.wallet
        if mine and self._held is not None:
            return dict(self._held)
        held = {symbol: self.balance(who, symbol) for symbol in sorted(self.tokens)}
        held["SOL"] = self.svm.get_balance(who) or 0
        if mine:
            self._held = dict(held)
        return held

    def advance(self, seconds: int) -> None:
        """Let ``seconds`` of world time pass (prices move once per second)."""
        self.second += seconds
        self._set_clock()

    def prices(self) -> dict[str, int]:
        """Prices (nano-USD per whole token) at the current world second."""
        while len(self._prices) <= self.second:
            last = self._prices[-1]
            step: dict[str, int] = {}
            for symbol in sorted(last):
                if symbol == "USDC":
                    step[symbol] = last[symbol]
                    continue
                self._rng, value = _splitmix(self._rng)
                move = value % (2 * PRICE_STEP_BPS + 1) - PRICE_STEP_BPS
                step[symbol] = max(1, last[symbol] * (10_000 + move) // 10_000)
            self._prices.append(step)
        return dict(self._prices[self.second])

    def accounts(self) -> list[Pubkey]:
        """Every account the world created, in a fixed order."""
        owners = [self.authority_pubkey, self.maker_pubkey]
        if self.wallet is not None:
            owners.append(self.wallet)
        found = [*owners, *(self.mint_pubkeys[s] for s in sorted(self.mints))]
        for owner in owners[1:]:
            found.extend(self.token_account(owner, s) for s in sorted(self.mints))
        return found

    def state_digest(self) -> str:
        """SHA-256 over every world account (address, lamports, owner, executable, data)."""
        if self._digest is not None:
            return self._digest
        h = hashlib.sha256()
        for address in self.accounts():
            account = self.svm.get_account(address)
            h.update(bytes(address))
            if account is None:
                h.update(b"\x00")
                continue
            data = bytes(account.data)
            h.update(b"\x01" + account.lamports.to_bytes(8, "little") + bytes(account.owner))
            h.update(bytes([account.executable]) + len(data).to_bytes(8, "little") + data)
        self._digest = h.hexdigest()
        return self._digest
