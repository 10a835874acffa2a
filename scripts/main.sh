#!/usr/bin/env bash
# Sets up .venv and reproduces the Fashion-MNIST DC-GMM row of Table 1 (6,000 constraints, 3 seeds, the runner's
# defaults: label-free start, 100 epochs; about 40 minutes on an idle 2-core CPU).
# Extra arguments are passed to experiments.run, e.g. `bash scripts/main.sh --epochs=5 --runs=1`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m experiments.run --dataset=fashion --num_constraints=6000 --runs=3 \
  --output_dir=results/fashion "$@"
