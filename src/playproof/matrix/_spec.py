"""The matrix spec: agent profiles x packaged targets x seeds x repetitions, as strict data.

A spec is a TOML file (read with :mod:`tomllib`, bounded) validated by
:class:`MatrixSpec`; its JSON Schema is published as ``matrix-spec``. Unknown
fields are refused, and so is any field that holds or is named for a secret
(see :mod:`playproof.matrix._secrets`): API keys are named by environment
variable only.

>>> spec = parse_spec('''
... targets = ["native/2048"]
... seeds = [0, 1]
... max_turns = 20
... [[agents]]
... name = "walk"
... agent = "baseline:random-walk"
... ''')
>>> len(spec.cells())
2
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from playproof._bounded import read_bounded
from playproof.core.canonical import digest
from playproof.core.game import MAX_SEED
from playproof.errors import FormatError
from playproof.matrix._secrets import secret_problems

__all__ = [
    "MATRIX_SCHEMA",
    "MAX_CELLS",
    "MAX_SPEC_BYTES",
    "AgentProfile",
    "Cell",
    "MatrixSpec",
    "ProfilePricing",
    "load_spec",
    "parse_spec",
    "target_slug",
]

MATRIX_SCHEMA = "playproof/matrix/v1"
MAX_SPEC_BYTES = 1 << 20
"""The largest spec file read."""
MAX_CELLS = 100_000
"""The most cells one matrix may hold (agents x targets x seeds x repetitions)."""

ProfileName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,47}$")]
"""Lower-case letters, digits, ``-`` and ``_``: it becomes part of a file name."""
TargetName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*/[a-z0-9][a-z0-9_.-]*$")]
"""A packaged target's registry name (``native/2048``); ad-hoc specs have no place here."""
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
Usd = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]
Turns = Annotated[int, Field(ge=1, le=1_000_000)]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class ProfilePricing(_Strict):
    """USD per million tokens, for ``openai:`` agents (cached input optional)."""

    input_usd_per_mtok: Usd
    output_usd_per_mtok: Usd
    cached_input_usd_per_mtok: Usd | None = None


class AgentProfile(_Strict):
    """One agent as the matrix plays it: an ``--agent`` spec and its options.

    ``agent`` is anything ``playproof run --agent`` accepts. ``agent_seed`` is
    the seed of a random-walk baseline; repetition ``r`` plays with
    ``agent_seed + r`` so repetitions of a seeded agent differ. ``cost_usd`` is
    the declared cost per decision of a ``python:``, ``cli:`` or ``session:``
    agent; ``pricing`` prices an ``openai:`` agent's tokens; ``api_key_env``
    names the environment variable holding its key (never the key).
    ``max_turns`` and ``budget_usd`` override the matrix's own.
    """

    name: ProfileName
    agent: Annotated[str, Field(min_length=1, max_length=1024)]
    agent_seed: Seed = 0
    cost_usd: Usd | None = None
    pricing: ProfilePricing | None = None
    base_url: Annotated[str, Field(max_length=1024)] | None = None
    api_key_env: EnvName | None = None
    vision: bool = False
    reply: Literal["json", "word"] = "json"
    timeout_s: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)] | None = None
    max_turns: Turns | None = None
    budget_usd: Usd | None = None


class Cell(_Strict):
    """One episode of the matrix: an agent profile on a target, a seed and a repetition."""

    agent: ProfileName
    target: TargetName
    seed: Seed
    repetition: Annotated[int, Field(ge=0)]

    @property
    def id(self) -> str:
        """``<agent>__<target slug>__s<seed>__r<repetition>``: the cell's file stem."""
        return f"{self.agent}__{target_slug(self.target)}__s{self.seed}__r{self.repetition}"


def target_slug(name: str) -> str:
    """A target name in a file name: ``native/2048`` becomes ``native.2048``."""
    return name.replace("/", ".")


class MatrixSpec(_Strict):
    """Agents x targets x seeds x repetitions, with the limits every cell runs under."""

    schema_: Literal["playproof/matrix/v1"] = Field("playproof/matrix/v1", alias="schema")
    name: Annotated[str, Field(min_length=1, max_length=128)] = "matrix"
    agents: Annotated[list[AgentProfile], Field(min_length=1, max_length=256)]
    targets: Annotated[list[TargetName], Field(min_length=1, max_length=256)]
    seeds: Annotated[list[Seed], Field(min_length=1, max_length=10_000)]
    repetitions: Annotated[int, Field(ge=1, le=10_000)] = 1
    max_turns: Turns
    budget_usd: Usd | None = None
    stop_at_game_over: bool = True

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=True)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        problems: list[str] = []
        names = [a.name for a in self.agents]
        if len(set(names)) != len(names):
            problems.append("agent profile names repeat")
        slugs = [target_slug(t) for t in self.targets]
        if len(set(slugs)) != len(slugs):
            problems.append("targets repeat")
        if len(set(self.seeds)) != len(self.seeds):
            problems.append("seeds repeat")
        # Cells are files named <agent>__<target slug>__...: names holding "__" could make
        # two cells share one file (agent "a__x" on "t/1", agent "a" on "x__t/1").
        stems = {f"{a}__{slug}" for a in names for slug in slugs}
        if len(stems) != len(names) * len(slugs):
            problems.append(
                "two agent and target pairs make the same record file name; "
                "rename one so that no name holds '__'"
            )
        cells = len(self.agents) * len(self.targets) * len(self.seeds) * self.repetitions
        if cells > MAX_CELLS:
            problems.append(f"{cells} cells is over the {MAX_CELLS}-cell limit")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def profile(self, name: str) -> AgentProfile:
        """The agent profile called ``name``."""
        for agent in self.agents:
            if agent.name == name:
                return agent
        raise KeyError(name)

    def cells(self) -> list[Cell]:
        """Every cell, agents outermost, repetitions innermost."""
        return [
            Cell(agent=agent.name, target=target, seed=seed, repetition=repetition)
            for agent in self.agents
            for target in self.targets
            for seed in self.seeds
            for repetition in range(self.repetitions)
        ]

    def limits(self, profile: AgentProfile) -> tuple[int, float | None]:
        """The turn limit and budget ``profile`` plays under."""
        turns = profile.max_turns if profile.max_turns is not None else self.max_turns
        budget = profile.budget_usd if profile.budget_usd is not None else self.budget_usd
        return turns, budget

    def config_digest(self, profile: AgentProfile) -> str:
        """SHA-256 of everything that shapes ``profile``'s episodes; a record carries it.

        A rerun replays a cell whose record was made under another
        configuration (another price, turn limit or agent) instead of skipping it.
        """
        turns, budget = self.limits(profile)
        return digest(
            {
                "profile": profile.model_dump(mode="json"),
                "max_turns": turns,
                "budget_usd": budget,
                "stop_at_game_over": self.stop_at_game_over,
            }
        )


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "spec"
    return f"{where}: {error['msg']}"


def parse_spec(text: str | bytes, *, what: str = "matrix spec") -> MatrixSpec:
    """Read a spec from TOML text; a malformed one, or one holding a secret, is a FormatError."""
    try:
        document: dict[str, Any] = tomllib.loads(
            text.decode("utf-8") if isinstance(text, bytes) else text
        )
        secrets = secret_problems(document)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise FormatError(f"{what} is not valid TOML: {exc}") from exc
    except RecursionError:  # both the parser and the secret scan recurse per level
        raise FormatError(f"{what} is nested too deeply to be a matrix spec") from None
    if secrets:
        raise FormatError(f"{what} refused: {'; '.join(secrets)}")
    try:
        return MatrixSpec.model_validate(document)
    except ValidationError as exc:
        count = exc.error_count()
        more = f" (and {count - 1} more)" if count > 1 else ""
        raise FormatError(f"{what} is invalid: {_first_error(exc)}{more}") from exc


def load_spec(path: Path) -> MatrixSpec:
    """Read and validate a spec file (at most MAX_SPEC_BYTES)."""
    return parse_spec(read_bounded(path, MAX_SPEC_BYTES, "matrix spec"), what=str(path))
