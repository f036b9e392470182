"""Check groups: named groups of checks with stable ids, decided by fixed code.

Pure code: no database, no HTTP, no model library. A group is a list of
:class:`CheckSpec` (a stable id, a fixed explanation for pass and for fail,
the checks it depends on) and one evaluator that decides every check from
some evidence. :func:`run_group` applies the preconditions: a check whose
precondition failed fails too, saying which one, instead of passing.

The proof service's groups (``replay_integrity``, ``limits_and_accounting``)
decide from a stored run record and its verification report; other groups
decide from whatever evidence their evaluator takes.

>>> group = CheckGroup(
...     name="demo",
...     title="a demonstration",
...     checks=(CheckSpec("a", "a holds", "a fails"), CheckSpec("b", "b holds", "b fails", ("a",))),
...     evaluate=lambda evidence: {"a": evidence > 0, "b": True},
... )
>>> [(c.id, c.passed) for c in run_group(group, 0).checks]
[('a', False), ('b', False)]
>>> run_group(group, 1).result
'pass'
"""

from playproof.checks._framework import (
    CheckGroup,
    CheckOutcome,
    CheckSpec,
    Evaluator,
    GroupResult,
    run_group,
)

__all__ = ["CheckGroup", "CheckOutcome", "CheckSpec", "Evaluator", "GroupResult", "run_group"]
