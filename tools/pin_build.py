"""Print the build digest a packaged target's game reports, to pin it in ``target.json``.

python tools/pin_build.py native/2048
"""

from __future__ import annotations

import sys

from playproof.targets import get_target
from playproof.targets._registry import _load_factory

if __name__ == "__main__":
    target = get_target(sys.argv[1])
    game = _load_factory(target.spec.factory)(**target.spec.options)
    try:
        print(game.descriptor.build.digest)
    finally:
        game.close()
