"""The platform's reference candidate, loaded for a candidate that wraps it (stdlib only).

``REFERENCE_SCRIPT`` names the reference candidate script; its folder goes on
the module path first, since the CHIP-8 reference imports the Game Boy one.
"""

import importlib.util
import os
import sys
from types import ModuleType


def load_reference() -> ModuleType:
    path = os.environ["REFERENCE_SCRIPT"]
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("reference", path)
    assert spec is not None
    assert spec.loader is not None
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    return reference
