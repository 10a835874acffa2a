#!/usr/bin/env bash
# The stable-training protocol: Fashion-MNIST, 6,000 pairs, seeds 0-4, each with --threads=1 and with
# --threads=2 (10 runs, a fresh pretraining per seed), JOBS runs at a time (default 2). Each thread count writes to
# OUT/threads<T>/ (logs OUT/threads<T>-seed<S>.log); then OUT/results.csv holds all rows with a `threads` column
# and OUT/summary.csv the mean and std per thread count and over all 10. A run's row does not depend on how many
# runs share the machine, only its wall time does: time one run alone for the wall time. Each thread count pretrains
# on its own (cache data/cache/protocol-threads<T>), so a row is the same as that of a lone run from a fresh cache.
#   bash scripts/protocol.sh docs/results/fashion/default                       # the defaults
#   JOBS=4 bash scripts/protocol.sh results/variant --pair_loss=likelihood      # other flags go to experiments.run
#   THREADS=1 bash scripts/protocol.sh results/x                                # one thread count only
set -euo pipefail
OUT=$(realpath -m "$1")
shift
cd "$(dirname "$0")/.."
PY=${PYTHON:-$PWD/.venv/bin/python}
mkdir -p "$OUT"
failed=0
for threads in ${THREADS:-2 1}; do
  for seed in 0 1 2 3 4; do
    while (( $(jobs -rp | wc -l) >= ${JOBS:-2} )); do wait -n || failed=1; done
    "$PY" -m experiments.run --dataset=fashion --num_constraints=6000 --seed="$seed" --threads="$threads" \
      --eval_every=5 --verbose=0 --output_dir="$OUT/threads$threads" --cache_dir="data/cache/protocol-threads$threads" \
      "$@" > "$OUT/threads$threads-seed$seed.log" 2>&1 &
  done
done
while (( $(jobs -rp | wc -l) > 0 )); do wait -n || failed=1; done
"$PY" - "$OUT" <<'PY'
import sys
from pathlib import Path

import pandas as pd

from experiments import results

out = Path(sys.argv[1])
parts = [results.read_rows(out / f"threads{t}" / "results.csv").assign(threads=t) for t in (1, 2)]
rows = pd.concat([p for p in parts if len(p)])
results.write_csv_atomically(rows, out / "results.csv")
keys = ("dataset", "method", "num_constraints", "epochs", "config")
summary = pd.concat([results.summarise(rows, (*keys, "threads")), results.summarise(rows, keys).assign(threads="all")])
summary["acc_min"] = [rows.loc[rows["threads"].eq(t) | (t == "all"), "acc"].min() for t in summary["threads"]]
results.write_csv_atomically(summary, out / "summary.csv")
print(summary.to_string(index=False))
PY
exit $failed
