r"""Accuracy and wall time of the runner's speed options on a short, small run (not the paper's setting).

    nice -n 5 python -m bench.options --output_dir=/tmp/bench-options

Runs ``experiments.run`` once per variant on 10,000 training and 2,000 test images of Fashion-MNIST with 1,000
constraints (the paper's density), 10 pretraining and 10 training epochs, and prints test ACC/NMI and the
training wall time (pretraining included) of each. Every variant pretrains itself (own cache directory).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", "/tmp/bench-options", "Where the variants' results go.")
flags.DEFINE_list("variants", ["fp32", "jit", "bf16"], "Variants to run (see VARIANTS).")
flags.DEFINE_integer("seed", 0, "Seed of every variant.")

REPO = Path(__file__).resolve().parents[1]
COMMON = [
    "--dataset=fashion",
    "--max_train_samples=10000",
    "--max_test_samples=2000",
    "--num_constraints=1000",
    "--pretrain_epochs=10",
    "--epochs=10",
    "--eval_every=10",
    "--verbose=0",
    "--nodeterministic",
]
VARIANTS = {
    "fp32": [],
    "jit": ["--jit_compile"],
    "bf16": ["--mixed_precision=bf16"],
    "deterministic": ["--deterministic"],
}


def main(argv):
    del argv
    rows = []
    for name in FLAGS.variants:
        out = Path(FLAGS.output_dir) / name
        cmd = [
            sys.executable,
            "-m",
            "experiments.run",
            *COMMON,
            *VARIANTS[name],
            f"--seed={FLAGS.seed}",
            f"--output_dir={out}",
            f"--cache_dir={out / 'cache'}",
        ]
        subprocess.run(cmd, cwd=REPO, check=True, capture_output=True, text=True)
        row = pd.read_csv(out / "results.csv").iloc[-1]
        rows.append({"variant": name, **{k: row[k] for k in ("acc", "nmi", "start_acc", "train_seconds")}})
        print(rows[-1], flush=True)
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    app.run(main)
