r"""Constraint storage at scale: build a ``ConstraintSet`` and extract batch submatrices W.

    nice -n 5 python -m bench.constraint_store                     # 1,000,000 samples, 1,000,000 pairs
    nice -n 5 python -m bench.constraint_store --num_samples=60000 --num_pairs=6000

Each measurement runs in a fresh child process that imports only numpy, scipy and the package
``dcgmm_tf/constraints/`` (not ``dcgmm_tf``, so not TensorFlow), so its peak memory is the store's: ``ru_maxrss``
(peak resident set of the process, baseline included) and the ``tracemalloc`` peak (Python and numpy
allocations only). Steps:

- ``from_labels``: draw the pairs from labels (the runner's path), then build the store.
- ``from_arrays``: build the store from ready (i, j, weight) arrays (a constraints file's path).
- ``first_submatrix``: the first batch builds the cached CSR adjacency.
- ``submatrix``: mean time per batch of ``batch_size`` random samples, and per batch of ``batch_size // 2``
  constrained pairs (the "separate" layout's pair batches).
"""

from __future__ import annotations

import importlib.util
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from types import ModuleType

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("num_samples", 1_000_000, "Samples indexed by the constraints.")
flags.DEFINE_integer("num_pairs", 1_000_000, "Constraint pairs.")
flags.DEFINE_integer("batch_size", 256, "Batch size of the submatrix extraction.")
flags.DEFINE_integer("batches", 2000, "Batches timed per kind.")
flags.DEFINE_string("output", None, "Append the results as one JSON line to this file.")

CONSTRAINTS_DIR = Path(__file__).resolve().parents[1] / "dcgmm_tf" / "constraints"


def _load_constraints_package() -> ModuleType:
    """Imports ``dcgmm_tf/constraints/`` as the top-level package ``constraints_only``, skipping ``dcgmm_tf``.

    The package uses relative imports only, so its submodules load as ``constraints_only.<name>``.
    """
    spec = importlib.util.spec_from_file_location(
        "constraints_only", CONSTRAINTS_DIR / "__init__.py", submodule_search_locations=[str(CONSTRAINTS_DIR)]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = package  # before exec: the relative imports of the submodules look the package up
    spec.loader.exec_module(package)
    return package


def measure(path: str, num_samples: int, num_pairs: int, batch_size: int, batches: int) -> dict:
    """One measurement in this process (call it in a fresh one)."""
    import numpy as np

    constraints_package = _load_constraints_package()
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, num_samples)
    if path == "from_arrays":
        # Distinct random pairs, as a constraints file would hold them (made before the clock starts).
        keys = np.unique(rng.integers(0, num_samples, (int(num_pairs * 1.1), 2)) @ [num_samples, 1])
        i, j = keys // num_samples, keys % num_samples
        keep = i != j
        i, j = i[keep][:num_pairs], j[keep][:num_pairs]
        weight = np.where(labels[i] == labels[j], 1e4, -1e4).astype(np.float32)
    baseline_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tracemalloc.start()
    start = time.perf_counter()
    if path == "from_labels":
        store = constraints_package.ConstraintSet.from_labels(labels, num_pairs, seed=0)
    else:
        store = constraints_package.ConstraintSet(i, j, weight, num_samples)
    build = time.perf_counter() - start
    start = time.perf_counter()
    store.submatrix(rng.choice(num_samples, batch_size, replace=False))
    first = time.perf_counter() - start
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    random_batches = [rng.choice(num_samples, batch_size, replace=False) for _ in range(batches)]
    pair_batches = []
    for _ in range(batches):
        chosen = rng.choice(len(store), batch_size // 2, replace=False)
        pair_batches.append(np.concatenate([store.i[chosen], store.j[chosen]]))
    timings = {}
    for kind, index_batches in (("random", random_batches), ("pairs", pair_batches)):
        start = time.perf_counter()
        nonzero = sum(int(np.count_nonzero(store.submatrix(b))) for b in index_batches)
        timings[kind] = ((time.perf_counter() - start) / batches, nonzero / batches)
    return {
        "path": path,
        "num_samples": num_samples,
        "num_pairs": len(store),
        "build_s": build,
        "first_submatrix_s": first,
        "build_plus_first_s": build + first,
        "submatrix_ms_random_batch": 1e3 * timings["random"][0],
        "submatrix_ms_pair_batch": 1e3 * timings["pairs"][0],
        "nonzeros_per_pair_batch": timings["pairs"][1],
        "tracemalloc_peak_mb": traced_peak / 2**20,
        "baseline_rss_mb": baseline_rss,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv):
    del argv
    rows = []
    for path in ("from_labels", "from_arrays"):
        code = (
            f"import json, bench.constraint_store as b; print(json.dumps(b.measure({path!r}, "
            f"{FLAGS.num_samples}, {FLAGS.num_pairs}, {FLAGS.batch_size}, {FLAGS.batches})))"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1], indent=1))
    if FLAGS.output:
        with open(FLAGS.output, "a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    app.run(main)
