#!/usr/bin/env bash
# The stable-training protocol (issue 22): Fashion-MNIST, 6,000 pairs, seeds 0-4, each with --threads=1 and with
# --threads=2 (10 runs, a fresh pretraining per seed), JOBS runs at a time (default 2). Each thread count writes to
# OUT/threads<T>/ (logs OUT/threads<T>-seed<S>.log); then OUT/results.csv holds all rows with a `threads` column
# and OUT/summary.csv the mean and std per thread count and over all 10. A run's row does not depend on how many
# runs share the machine, only its wall time does: time one run alone for the wall time. Each thread count pretrains
# on its own (cache data/cache/protocol-threads<T>), so a row is the same as that of a lone run from a fresh cache.
#   bash scripts/protocol.sh docs/results/fashion/default                       # the defaults
#   JOBS=4 bash scripts/protocol.sh results/variant --pair_loss=likelihood      # other flags go to experiments.run
set -euo pipefail
OUT=$(realpath -m "$1")
shift
cd "$(dirname "$0")/.."
PY=${PYTHON:-$PWD/.venv/bin/python}
mkdir -p "$OUT"
failed=0
for threads in 2 1; do
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

out = Path(sys.argv[1])
rows = pd.concat([pd.read_csv(out / f"threads{t}" / "results.csv").assign(threads=t) for t in (1, 2)
                  if (out / f"threads{t}" / "results.csv").exists()])
rows.to_csv(out / "results.csv", index=False)
scores = ["acc", "nmi", "ari", "train_seconds"]
groups = {f"threads={t}": r for t, r in rows.groupby("threads")} | {"all": rows}
summary = pd.DataFrame([{"runs": len(r), "group": g, **{f"{c}_mean": r[c].mean() for c in scores},
                         **{f"{c}_std": r[c].std() for c in scores}, "acc_min": r["acc"].min()}
                        for g, r in groups.items()])
summary.to_csv(out / "summary.csv", index=False)
print(summary.to_string(index=False))
PY
exit $failed
