"""The registry of packaged targets (``playproof.targets`` entry points) and ad-hoc targets."""

from playproof.targets._adhoc import ADHOC_FAMILIES, adhoc_family, adhoc_target, read_contract
from playproof.targets._provenance import target_libraries, target_roms
from playproof.targets._registry import (
    ENTRY_POINT_GROUP,
    Target,
    TargetSpec,
    get_target,
    list_targets,
    load_target_dir,
    read_input_script,
)

__all__ = [
    "ADHOC_FAMILIES",
    "ENTRY_POINT_GROUP",
    "Target",
    "TargetSpec",
    "adhoc_family",
    "adhoc_target",
    "get_target",
    "list_targets",
    "load_target_dir",
    "read_contract",
    "read_input_script",
    "target_libraries",
    "target_roms",
]
