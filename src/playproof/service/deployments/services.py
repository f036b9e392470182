"""Operations on targets and deployments, and the read rule of trust labels (no HTTP here)."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, defer

from playproof.core.canonical import canonical_json
from playproof.service.db import utc_now
from playproof.service.deployments.labels import TrustLabel
from playproof.service.deployments.models import Deployment, Target
from playproof.service.problems import Problem
from playproof.service.runs.models import Run

__all__ = [
    "DEFAULT_RUNS_PAGE",
    "MAX_RUNS_OFFSET",
    "MAX_RUNS_PAGE",
    "RegistryTarget",
    "create_deployment",
    "deployment_runs",
    "get_deployment",
    "get_target",
    "list_targets",
    "registry_targets",
    "require_read",
    "sync_targets",
]

_DEPLOYMENT_ID = re.compile(r"[0-9a-f]{32}")

DEFAULT_RUNS_PAGE = 50
"""Runs per page of a deployment's runs when the request does not say."""
MAX_RUNS_PAGE = 200
"""The most runs one page lists."""
MAX_RUNS_OFFSET = 1_000_000
"""The farthest a page may start."""


@dataclass(frozen=True)
class RegistryTarget:
    """What the service keeps of a packaged target."""

    name: str
    platform: str
    build_digest: str
    calibration: str
    calibrated: bool


def registry_targets() -> list[RegistryTarget]:
    """Every packaged target that loads, from :func:`playproof.targets.list_targets`.

    The platform is the registry family (the part of the name before the
    slash); the calibration verdict is ``separates``, ``does-not-separate``
    (calibrated, and the contract does not separate the reference from
    trivial play) or ``uncalibrated``.
    """
    from playproof.targets import list_targets as packaged

    found = []
    for target in packaged():
        separates = target.spec.separates
        verdict = (
            "uncalibrated"
            if separates is None
            else ("separates" if separates else "does-not-separate")
        )
        found.append(
            RegistryTarget(
                name=target.name,
                platform=target.name.split("/", 1)[0],
                build_digest=target.spec.build_digest,
                calibration=verdict,
                calibrated=target.calibrated,
            )
        )
    return found


def sync_targets(session: Session, targets: Sequence[RegistryTarget]) -> int:
    """Insert or refresh the targets table from ``targets``; how many rows changed. Commits.

    A target that left the registry stays (deployments and challenges name
    it), as it was last seen.
    """
    known = {t.name: t for t in session.scalars(select(Target))}
    changed = 0
    for target in targets:
        row = known.get(target.name)
        values = (target.platform, target.build_digest, target.calibration, target.calibrated)
        if row is None:
            session.add(
                Target(
                    name=target.name,
                    platform=target.platform,
                    build_digest=target.build_digest,
                    calibration=target.calibration,
                    calibrated=target.calibrated,
                )
            )
        elif (row.platform, row.build_digest, row.calibration, row.calibrated) != values:
            row.platform, row.build_digest, row.calibration, row.calibrated = values
            row.refreshed_at = utc_now()
        else:
            continue
        changed += 1
    session.commit()
    return changed


def list_targets(session: Session) -> list[Target]:
    """Every known target, by name."""
    return list(session.scalars(select(Target).order_by(Target.name)))


def get_target(session: Session, name: str) -> Target:
    """The target called ``name``; a 404 problem when the service does not know it."""
    target = session.get(Target, name) if len(name) <= 128 else None
    if target is None:
        raise Problem(404, "unknown-target", f"no packaged target named {name[:64]!r}")
    return target


def create_deployment(
    session: Session,
    owner_id: int,
    target_name: str,
    *,
    configuration: dict[str, Any],
    policy_envelope: dict[str, Any] | None = None,
    version: str | None = None,
    runtime: str = "packaged",
) -> Deployment:
    """Deploy a packaged target for ``owner_id``; commits.

    The lineage records the target's build digest now (``version``, when
    given, must be it). A non-empty configuration, a policy envelope of its
    own, or an uncalibrated target makes the deployment a customized instance,
    read by its owner only: a policy-bound run is judged against its
    deployment's envelope, which is private, so a verdict judged against it is
    never shown to the public as the packaged target's. An ``external``
    runtime is refused: the service cannot replay it.
    """
    if runtime != "packaged":
        raise Problem(
            422,
            TrustLabel.EXTERNAL.value,
            f"{TrustLabel.EXTERNAL.value}: the service replays packaged targets only, "
            "so it does not accept a deployment on an external runtime",
        )
    target = session.get(Target, target_name) if len(target_name) <= 128 else None
    if target is None:
        raise Problem(
            422, "unknown-target", f"no packaged target named {target_name[:64]!r} to deploy"
        )
    if version is not None and version != target.build_digest:
        raise Problem(
            409,
            "version-mismatch",
            f"{target.name} is at build {target.build_digest[:16]}..., not {version[:16]}...: "
            "deploy the current build",
        )
    config_text = canonical_json(configuration).decode("utf-8")
    customized = bool(configuration) or policy_envelope is not None or not target.calibrated
    label = TrustLabel.CUSTOMIZED if customized else TrustLabel.CANONICAL
    deployment = Deployment(
        id=uuid.uuid4().hex,
        owner_id=owner_id,
        target_name=target.name,
        template_version=target.build_digest,
        configuration=config_text,
        configuration_sha256=hashlib.sha256(config_text.encode("utf-8")).hexdigest(),
        customized=customized,
        policy_envelope=(
            canonical_json(policy_envelope).decode("utf-8") if policy_envelope is not None else None
        ),
        trust_label=label.value,
    )
    session.add(deployment)
    session.commit()
    return deployment


def get_deployment(session: Session, deployment_id: str) -> Deployment:
    """The deployment with this id; a 404 problem when there is none."""
    found = (
        session.get(Deployment, deployment_id) if _DEPLOYMENT_ID.fullmatch(deployment_id) else None
    )
    if found is None:
        raise Problem(404, "unknown-deployment", f"no deployment with id {deployment_id[:64]!r}")
    return found


def require_read(label: str, owner_id: int, viewer: int | None, what: str) -> None:
    """Refuse reading something labelled ``label`` owned by ``owner_id`` to ``viewer``.

    Canonical: anyone. Customized: its owner only (401 without credentials,
    403 for another owner). External: nobody (the service holds none; a 422
    names the label).
    """
    if label == TrustLabel.CANONICAL.value:
        return
    if label == TrustLabel.CUSTOMIZED.value:
        if viewer is None:
            raise Problem(
                401,
                "owner-only",
                f"{what} is a {TrustLabel.CUSTOMIZED.value}: send its owner's API token",
            )
        if viewer != owner_id:
            raise Problem(
                403,
                "owner-only",
                f"{what} is a {TrustLabel.CUSTOMIZED.value}: only its owner may read it",
            )
        return
    raise Problem(
        422, TrustLabel.EXTERNAL.value, f"{what} is an {label}: the service does not serve it"
    )


def deployment_runs(
    session: Session, deployment: Deployment, viewer: int | None, *, limit: int, offset: int
) -> tuple[int, list[Run]]:
    """(how many, one page oldest first) of the runs played on ``deployment`` that ``viewer`` reads.

    Its owner reads them all; anyone else its canonical runs only (a run's own
    label may be lower than its deployment's). The caller checks the
    deployment's read rule first (:func:`require_read`).
    """
    where = [Run.deployment_id == deployment.id]
    if viewer != deployment.owner_id:
        where.append(Run.trust_label == TrustLabel.CANONICAL.value)
    total = session.scalar(select(func.count()).select_from(Run).where(*where)) or 0
    page = session.scalars(
        select(Run)
        .options(defer(Run.envelope))  # a status document needs the columns only
        .where(*where)
        .order_by(Run.created_at, Run.id)
        .limit(limit)
        .offset(offset)
    )
    return int(total), list(page)
