"""Verification: recompute what a run earned; never calls an agent."""

from playproof.core.report import CHECK_IDS, CheckResult, VerificationReport
from playproof.verify._attest import attest, parse_record

__all__ = ["CHECK_IDS", "CheckResult", "VerificationReport", "attest", "parse_record"]
