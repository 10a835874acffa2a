#!/usr/bin/env bash
# Small fixed-seed runs of every runner and method (a few minutes on 2 cores), to check that a change of code
# keeps the results rows bit-identical: run it on the old and the new code, then compare the two folders:
#   bash scripts/reference_rows.sh /tmp/rows-before     # in a checkout of the old code
#   bash scripts/reference_rows.sh /tmp/rows-after
#   .venv/bin/python scripts/compare_rows.py /tmp/rows-before /tmp/rows-after
set -euo pipefail
OUT=$(realpath -m "$1")
cd "$(dirname "$0")/.."
PY=${PYTHON:-$PWD/.venv/bin/python}  # not resolved through its symlink: that would leave the virtualenv
# The older recipe's flags (docs/findings.md), with which these rows were first made, so that a move of the defaults
# leaves them alone.
OLDER="--pretrain_epochs=10 --init_em_starts=10 --pair_tuning_epochs=0 --epochs=100 --restart_every=10"
OLDER="$OLDER --lr_schedule=staircase --spread_neighbours=0"
C="$OLDER --max_train_samples=2000 --max_test_samples=500 --threads=1 --verbose=0 --cache_dir=$OUT/cache --eval_every=2"
$PY -m experiments.run $C --output_dir="$OUT/dcgmm" --epochs=4 --pretrain_epochs=2 --restart_every=2 \
  --num_constraints=1000 --runs=2
$PY -m experiments.run $C --output_dir="$OUT/vade" --method=vade --epochs=3 --pretrain_epochs=2
$PY -m experiments.run $C --output_dir="$OUT/labels" --epochs=3 --pretrain_epochs=2 --cluster_init=labels \
  --restart_every=0 --init_labels_per_class=5 --pretrain_seed=7 --num_constraints=500 --q=0.1
$PY -m experiments.run $C --output_dir="$OUT/gmm" --epochs=3 --pretrain_epochs=2 --cluster_init=gmm \
  --restart_every=0 --layout=spread --link_type=must --transitive_closure --num_constraints=60
$PY -m experiments.run $C --output_dir="$OUT/pck" --method=pckmeans --epochs=5 --num_constraints=500
$PY -m experiments.run $C --output_dir="$OUT/sdec" --method=sdec --epochs=2 --layer_pretrain_epochs=1 \
  --finetune_epochs=1 --num_constraints=500
$PY -m experiments.run $C --output_dir="$OUT/cidec" --method=cidec --epochs=2 --layer_pretrain_epochs=1 \
  --finetune_epochs=1 --num_constraints=500
$PY -m experiments.table1 $C --output_dir="$OUT/table1" --methods=vade,pckmeans,dcgmm --epochs=2 --pretrain_epochs=1 \
  --overrides=pckmeans.epochs=4 --num_constraints=300
$PY -m experiments.fig_noise $C --output_dir="$OUT/noise" --work_dir="$OUT/noise_work" --methods=pckmeans \
  --noise_levels=0.1,0.2 --epochs=3 --constraint_fraction=0.2 --cidec_noise_penalties=0.01,0.005
$PY -m experiments.active $C --output_dir="$OUT/active" --max_train_samples=1500 --max_test_samples=400 \
  --pretrain_epochs=1 --start_pairs=100 --budgets=200,300 --start_epochs=2 --round_epochs=1 \
  --strategies=anchor,uncertain,random
