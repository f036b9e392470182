"""The registry of packaged targets, discovered through the ``playproof.targets`` entry points."""

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
    "ENTRY_POINT_GROUP",
    "Target",
    "TargetSpec",
    "get_target",
    "list_targets",
    "load_target_dir",
    "read_input_script",
]
