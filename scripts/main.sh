#!/usr/bin/env bash
# Sets up .venv and reproduces the Fashion-MNIST DC-GMM row of Table 1 (6,000 constraints, 3 seeds, the runner's
# defaults: label-free start, 100 epochs; about 40 minutes on an idle 2-core CPU).
# --quick first: a first answer in minutes (one seed, 40 epochs, into results/fashion_quick). Other arguments are
# passed to experiments.run, e.g. `bash scripts/main.sh --epochs=5 --runs=1`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [[ "${1:-}" == "--quick" ]]; then
  shift
  set -- --runs=1 --epochs=40 --output_dir=results/fashion_quick "$@"  # later flags win over earlier ones
fi
.venv/bin/python -m experiments.run --dataset=fashion --num_constraints=6000 --runs=3 \
  --output_dir=results/fashion "$@"
