#!/usr/bin/env bash
# Sets up .venv and reproduces the default row of DC-GMM on Fashion-MNIST (6,000 constraints, seeds 0-4, the
# runner's default recipe: 15 pretraining epochs, 5 epochs of tuning the autoencoder with the pairs, the label-free
# start, each answer also spread to its pair's nearest neighbours, 10 epochs with a cosine learning rate, bf16 on a CPU
# with bf16 units; 4.5-10 minutes per seed on an idle 2-core CPU, depending on the CPU, so 22-50 in all).
# --quick first: a first answer in 5-12 minutes (seed 0 only, into results/fashion_quick). Other arguments are
# passed to experiments.run, e.g. `bash scripts/main.sh --epochs=5 --runs=1`, or
# `--protocol=paper`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [[ "${1:-}" == "--quick" ]]; then
  shift
  set -- --runs=1 --output_dir=results/fashion_quick "$@"  # later flags win over earlier ones
fi
.venv/bin/python -m experiments.run --dataset=fashion --num_constraints=6000 --runs=5 --eval_every=5 \
  --output_dir=results/fashion "$@"
