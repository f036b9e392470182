"""Print (or, with --write, pin) the build digest a packaged target's game reports.

    python tools/pin_build.py native/2048           # print the digest
    python tools/pin_build.py native/2048 --write   # update target.json

A native game's build digest covers its source file, so any edit to the game
(even a reformat) changes it; re-pinning is a deliberate, reviewed step.
"""

from __future__ import annotations

import json
import sys

from playproof.targets import get_target
from playproof.targets._registry import _load_factory

if __name__ == "__main__":
    target = get_target(sys.argv[1])
    game = _load_factory(target.spec.factory)(**target.spec.options)
    try:
        digest = game.descriptor.build.digest
    finally:
        game.close()
    print(digest)
    if "--write" in sys.argv[2:] and target.folder is not None:
        path = target.folder / "target.json"
        spec = json.loads(path.read_text(encoding="utf-8"))
        spec["build_digest"] = digest
        path.write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
