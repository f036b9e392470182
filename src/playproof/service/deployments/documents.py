"""Public documents of the deployments domain: every field listed by hand."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from playproof.core.canonical import canonical_json
from playproof.errors import FormatError
from playproof.service.deployments.labels import TrustLabelName
from playproof.service.proofs.models import RunStatusDocument

__all__ = [
    "MAX_CONFIGURATION_KEYS",
    "DeploymentDocument",
    "DeploymentRequest",
    "DeploymentRunsDocument",
    "TargetDocument",
]

MAX_CONFIGURATION_KEYS = 64
"""A deployment's configuration is a small JSON object (the request body is bounded too)."""


class _Public(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class DeploymentRequest(BaseModel):
    """``POST /api/v1/deployments``: a packaged target, its configuration, its policy envelope."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    target: Annotated[str, Field(min_length=1, max_length=128)]
    version: Annotated[str | None, Field(pattern=r"^[0-9a-f]{64}$")] = None
    """The build digest deployed; when given it must be the target's current build."""
    configuration: dict[str, Any] = Field(default_factory=dict)
    """Private: stored, never served (its SHA-256 is). Non-empty makes a customized instance."""
    policy_envelope: dict[str, Any] | None = None
    runtime: Literal["packaged", "external"] = "packaged"

    @field_validator("configuration")
    @classmethod
    def _small(cls, value: dict[str, Any]) -> dict[str, Any]:
        if len(value) > MAX_CONFIGURATION_KEYS:
            raise ValueError(f"a configuration has at most {MAX_CONFIGURATION_KEYS} keys")
        return _canonical(value)

    @field_validator("policy_envelope")
    @classmethod
    def _storable(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else _canonical(value)


def _canonical(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` if it has a canonical JSON form (no NaN, no integers beyond 2**53)."""
    try:
        canonical_json(value)
    except FormatError as exc:
        raise ValueError(str(exc)) from None
    return value


class DeploymentDocument(_Public):
    """A deployment as its owner sees it: lineage and label, never the configuration."""

    id: str
    target: str
    template_version: str
    customized: bool
    configuration_sha256: str
    has_policy_envelope: bool
    trust_label: TrustLabelName
    created_at: datetime


class TargetDocument(_Public):
    """A packaged target as the service knows it."""

    name: str
    platform: str
    build_digest: str
    calibration: Literal["separates", "does-not-separate", "uncalibrated"]
    calibrated: bool
    leaderboard_url: str


class DeploymentRunsDocument(_Public):
    """A page of a deployment's runs, oldest first: ``total`` in all, this page from ``offset``.

    Anyone but the deployment's owner sees its canonical runs only.
    """

    deployment_id: str
    total: int
    limit: int
    offset: int
    runs: list[RunStatusDocument]
