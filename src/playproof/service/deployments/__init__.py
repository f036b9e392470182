"""Targets, deployments and lineage: what a run was played on, and the trust label it earns.

The targets table mirrors the packaged registry (name, platform family,
build digest, calibration verdict), refreshed when the service starts. A
deployment is an owner's target at a version with its own configuration
(private) and policy envelope; its lineage records the target's build at
deploy time, and it never inherits the target's scores.
"""
