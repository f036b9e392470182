"""Write the branch hints of a shipped Game Boy corpus (every inverted branch tried).

    python tools/branch_hints.py blargg mooneye     # rewrites playproof/corpus/hints/

Each case's every ``dmg-branch`` candidate is tried once on the reference, the
way a grading tries it, and the ones that make the test fail cleanly are
listed by ROM digest. Minutes per corpus on two cores. Rerun it when a ROM,
the reference emulator or the acceptance rules change; a stale file only
slows the search down (a hinted branch is still tried before it is used).
"""

from __future__ import annotations

import json
import sys
import time
from importlib.metadata import version

from playproof.corpus import load_corpus, load_manifest, shipped_paths
from playproof.corpus._branch_hints import HINTS_DIR
from playproof.corpus._variants import branch_hints

if __name__ == "__main__":
    for name in sys.argv[1:]:
        manifest_path, _, roms = shipped_paths(name)
        corpus = load_corpus(load_manifest(manifest_path), roms)
        started = time.perf_counter()
        hints = branch_hints(corpus, jobs=2, reference=f"pyboy {version('pyboy')}")
        path = HINTS_DIR / f"{corpus.manifest.corpus_id}.json"
        document = hints.model_dump(mode="json", by_alias=True)
        path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        sites = sum(len(found) for found in hints.roms.values())
        print(
            f"{name}: {sites} branches qualify in {len(hints.roms)} of "
            f"{len(corpus.manifest.cases)} ROMs ({time.perf_counter() - started:.0f} s) -> {path}"
        )
