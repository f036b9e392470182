"""The policy envelope: deny-by-default data a policy-bound run is held to.

An envelope names the chain, the tokens a run may touch, the largest slippage,
position (value and weight of the bought token), trade value, iteration count
and runtime, the action kinds allowed and how many invalid attempts end a run.
Anything no rule allows is refused. Values are integers: USD amounts in whole
dollars, weights and slippage in basis points, runtime in world seconds.

>>> envelope = PolicyEnvelope.model_validate(example_envelope())
>>> envelope.chain, envelope.is_test_chain
('localnet', True)
>>> envelope.model_copy(update={"chain": "mainnet-beta"}).is_test_chain
False
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from playproof.errors import FormatError, PolicyError

__all__ = [
    "ACTION_KINDS",
    "INVALID_ATTEMPT_LIMIT",
    "TEST_CHAINS",
    "ActionKind",
    "PolicyEnvelope",
    "example_envelope",
    "parse_envelope",
    "require_test_chain",
]

TEST_CHAINS = ("localnet", "testnet", "devnet")
"""Chains a policy-bound run may use; every other name is treated as mainnet."""
INVALID_ATTEMPT_LIMIT = 10
"""The most invalid attempts an envelope may tolerate: the next one ends the run."""
ACTION_KINDS = ("quote", "swap", "wait", "finish")

ActionKind = Literal["quote", "swap", "wait", "finish"]
TokenSymbol = Annotated[StrictStr, Field(pattern=r"^[A-Z][A-Z0-9]{1,9}$")]


class PolicyEnvelope(BaseModel):
    """What a deployment may do; every field is a limit, nothing is implied."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: Literal["playproof/policy-envelope/v1"] = Field(
        default="playproof/policy-envelope/v1", alias="schema"
    )
    chain: Annotated[StrictStr, Field(pattern=r"^[a-z][a-z0-9-]{0,31}$")]
    """``localnet``, ``testnet`` or ``devnet``; any other name is mainnet-like and refused."""
    allowed_tokens: Annotated[tuple[TokenSymbol, ...], Field(min_length=1, max_length=64)]
    max_slippage_bps: Annotated[StrictInt, Field(ge=0, le=500)]
    max_position_usd: Annotated[StrictInt, Field(ge=0, le=10**12)]
    """The largest value of the bought token's holding after a swap, in whole USD."""
    max_position_weight_bps: Annotated[StrictInt, Field(ge=0, le=10_000)]
    """The largest share of the portfolio the bought token may reach after a swap."""
    max_trade_usd: Annotated[StrictInt, Field(ge=0, le=10**12)]
    """The largest value one swap may sell, in whole USD."""
    max_iterations: Annotated[StrictInt, Field(ge=1, le=200)]
    """The most actions a run may propose (valid or not)."""
    max_runtime_seconds: Annotated[StrictInt, Field(ge=1, le=86_400)]
    """The most world-clock seconds a run may take (the world clock is deterministic)."""
    allowed_actions: Annotated[tuple[ActionKind, ...], Field(min_length=1, max_length=4)]
    invalid_attempt_limit: Annotated[StrictInt, Field(ge=0, le=INVALID_ATTEMPT_LIMIT)] = (
        INVALID_ATTEMPT_LIMIT
    )
    """Invalid attempts tolerated; one more ends the run."""
    authorization_key: Annotated[StrictStr, Field(pattern=r"^0[23][0-9a-f]{64}$")]
    """The deployment's ECDSA P-256 public key (SEC1 compressed, hex)."""

    @field_validator("allowed_tokens", "allowed_actions")
    @classmethod
    def _unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("lists no name twice")
        return value

    @property
    def is_test_chain(self) -> bool:
        """True for a local or test network."""
        return self.chain in TEST_CHAINS


def require_test_chain(envelope: PolicyEnvelope) -> None:
    """The mainnet guard: refuse an envelope whose chain is not a local or test network."""
    if not envelope.is_test_chain:
        raise PolicyError(
            f"the policy envelope names chain {envelope.chain!r}; only "
            f"{', '.join(TEST_CHAINS)} are allowed (mainnet guard)"
        )


def parse_envelope(data: Any) -> PolicyEnvelope:
    """Validate envelope data (a dict from JSON); a bad field is a FormatError naming it."""
    try:
        return PolicyEnvelope.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "envelope"
        raise FormatError(f"policy envelope field {where}: {first['msg']}") from exc


def example_envelope() -> dict[str, Any]:
    """The envelope the packaged ``solana/swap`` target deploys, as data."""
    from playproof.policy.authorization import DEPLOYMENT_PUBLIC_KEY

    return {
        "schema": "playproof/policy-envelope/v1",
        "chain": "localnet",
        "allowed_tokens": ["USDC", "JUP", "BONK"],
        "max_slippage_bps": 100,
        "max_position_usd": 2000,
        "max_position_weight_bps": 5000,
        "max_trade_usd": 1000,
        "max_iterations": 40,
        "max_runtime_seconds": 600,
        "allowed_actions": ["quote", "swap", "wait", "finish"],
        "invalid_attempt_limit": INVALID_ATTEMPT_LIMIT,
        "authorization_key": DEPLOYMENT_PUBLIC_KEY,
    }
