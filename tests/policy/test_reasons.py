from playproof.policy import FailureReason


def test_the_failure_reasons_are_pinned() -> None:
    assert [r.value for r in FailureReason] == [
        "mainnet_guard_triggered",
        "wallet_policy_rejected",
        "authorization_signature_rejected",
        "hosted_wallet_unavailable",
        "invalid_action_attempts_exceeded",
    ]
