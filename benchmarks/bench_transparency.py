"""The transparency log at 1,000,000 leaves: appends, proofs and checks against plain SHA-256.

Measured in the same run:

- ``sha256``: hashing the same leaf data with plain SHA-256, one call per
  leaf (the baseline; also the unit the per-proof times are given in);
- ``append``: leaf hash plus :meth:`MerkleTree.append` for every leaf, one
  at a time as a service appends records (leaves per second, and the ratio to
  the baseline's hashes per second);
- ``load``: one :meth:`MerkleTree.extend` of all the stored leaf hashes, as
  a service restoring its log from storage would (n - 1 node hashes);
- ``root``: the Merkle Tree Hash of the whole log;
- ``inclusion``/``consistency`` generation and ``verify_inclusion``/
  ``verify_consistency``: the median over random leaves and size pairs, per
  proof, in microseconds and in baseline SHA-256 calls.

Bulk phases are timed in process CPU time (the machine is shared); per-proof
times are medians of wall-clock calls. Targets: appends at least 0.2x the
bare hashing rate (each leaf costs a leaf hash and on average one node hash,
plus Python bookkeeping), a load at least 0.4x (one node hash per leaf), and
each proof generated or checked in at most 200 SHA-256 calls' time (O(log n)
hashes). Peak memory counts the leaf data, both trees and the samples.

    python benchmarks/bench_transparency.py [leaves]
"""

from __future__ import annotations

import hashlib
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

from playproof.transparency import (
    MerkleTree,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)

LEAVES = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
SAMPLES = 2_000
"""Proofs generated and checked per kind."""
APPEND_TARGET_RATIO = 0.2
LOAD_TARGET_RATIO = 0.4
PROOF_TARGET_HASHES = 200.0


def _median_us(calls: list[Callable[[], object]]) -> float:
    times = []
    for call in calls:
        start = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1000


def _hash_all(data: list[bytes]) -> float:
    """Seconds to hash every leaf's data with plain SHA-256 (leaf prefix included)."""
    start = time.process_time()
    for item in data:
        hashlib.sha256(b"\x00" + item).digest()
    return time.process_time() - start


def main() -> None:
    """Build the log, measure, print."""
    data = [hashlib.sha256(i.to_bytes(8, "big")).digest() for i in range(LEAVES)]

    baseline_s = _hash_all(data)
    tree = MerkleTree()
    start = time.process_time()
    for item in data:
        tree.append(leaf_hash(item))
    append_s = time.process_time() - start
    stored = [tree.leaf_hash(i) for i in range(LEAVES)]
    loaded = MerkleTree()
    start = time.process_time()
    loaded.extend(stored)
    load_s = time.process_time() - start
    assert loaded.root() == tree.root()
    del loaded, stored
    # The baseline runs before and after the appends; the faster run counts.
    baseline_s = min(baseline_s, _hash_all(data))
    per_hash_us = baseline_s / LEAVES * 1e6

    start = time.perf_counter()
    root = tree.root()
    root_us = (time.perf_counter() - start) * 1e6

    rng = random.Random(1)
    indexes = [rng.randrange(LEAVES) for _ in range(SAMPLES)]
    pairs = []
    for _ in range(SAMPLES):
        old = rng.randrange(1, LEAVES)
        pairs.append((old, rng.randrange(old, LEAVES + 1)))

    gen_inclusion = _median_us([partial(tree.inclusion_proof, i) for i in indexes])
    gen_consistency = _median_us([partial(tree.consistency_proof, *p) for p in pairs])

    leaf_hashes = {i: tree.leaf_hash(i) for i in indexes}
    paths = {i: tree.inclusion_proof(i) for i in indexes}
    roots = {n: tree.root(n) for pair in pairs for n in pair}
    proofs = {p: tree.consistency_proof(*p) for p in pairs}
    assert all(verify_inclusion(leaf_hashes[i], i, LEAVES, paths[i], root).valid for i in indexes)
    check_inclusion = _median_us(
        [partial(verify_inclusion, leaf_hashes[i], i, LEAVES, paths[i], root) for i in indexes]
    )
    check_consistency = _median_us(
        [partial(verify_consistency, o, n, roots[o], roots[n], proofs[o, n]) for o, n in pairs]
    )

    append_rate = LEAVES / append_s
    baseline_rate = LEAVES / baseline_s
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"log of {LEAVES:,} leaves ({SAMPLES:,} proofs of each kind, medians)")
    print(f"  sha256 baseline   {baseline_rate:>12,.0f} hashes/s  ({per_hash_us:.3f} us each)")
    print(
        f"  append            {append_rate:>12,.0f} leaves/s  "
        f"({append_rate / baseline_rate:.2f}x baseline; target >= {APPEND_TARGET_RATIO}x)"
    )
    load_rate = LEAVES / load_s
    print(
        f"  load (extend)     {load_rate:>12,.0f} leaves/s  "
        f"({load_rate / baseline_rate:.2f}x baseline; target >= {LOAD_TARGET_RATIO}x)"
    )
    print(f"  root              {root_us:>12.1f} us")
    rows = [
        ("inclusion proof", gen_inclusion),
        ("consistency proof", gen_consistency),
        ("verify inclusion", check_inclusion),
        ("verify consistency", check_consistency),
    ]
    for name, micros in rows:
        print(
            f"  {name:<18}{micros:>12.1f} us  ({micros / per_hash_us:.0f} sha256 calls; "
            f"target <= {PROOF_TARGET_HASHES:.0f})"
        )
    print(f"  peak memory       {rss_mib:>12.0f} MiB (leaf data, both trees, samples)")


if __name__ == "__main__":
    main()
