from playproof.policy.checks import WALLET_SAFETY_CHECKS, WALLET_SAFETY_EXPLANATIONS


def test_every_check_has_fixed_explanations_in_report_order() -> None:
    assert tuple(WALLET_SAFETY_EXPLANATIONS) == WALLET_SAFETY_CHECKS
    for good, bad in WALLET_SAFETY_EXPLANATIONS.values():
        assert good
        assert bad
        assert good != bad
