r"""Where one run of the recipe spends its time, phase by phase.

    python -m bench.phases                                  # the default recipe on Fashion-MNIST, seed 0, all cores
    python -m bench.phases --dataset=mnist --output=bench/results/phases.jsonl

Runs ``dcgmm_tf.recipe.train_and_evaluate`` as the runner does (no pretraining cache, so the pretraining runs; the
run's files go to a temporary folder, removed after) and reports the seconds of each phase from the recipe's
progress lines (pretraining, tuning with the pairs, the start, training) and, within training, of each restart of
the mixture, beside ``train_seconds`` and the run's scores. Other flags are the runner's (``experiments.run``),
e.g. ``--epochs=5``. Wall clock: run it on an otherwise idle machine.
"""

from __future__ import annotations

import logging
import re

from absl import app, flags

from experiments import run

FLAGS = flags.FLAGS
flags.DEFINE_string("output", None, "Append the results as one JSON line to this file.")
PHASE = re.compile(r"^(.*) done in (\d+\.\d) s$")
RESTART = re.compile(r"^mixture restarted by \w+ after epoch (\d+) in (\d+\.\d) s$")


class _PhaseLines(logging.Handler):
    """Collects the seconds of the recipe's progress lines."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.phases: dict[str, float] = {}
        self.restarts: dict[int, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if found := PHASE.match(message):
            self.phases[found[1]] = float(found[2])
        elif found := RESTART.match(message):
            self.restarts[int(found[1])] = float(found[2])


def main(argv):
    del argv
    import dataclasses
    import tempfile

    from bench.common import machine, report
    from dcgmm_tf import recipe
    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.runtime import configure

    config, runtime = run.configs(FLAGS)
    data = load_dataset(config.dataset, runtime.data_dir)
    lines = _PhaseLines()
    logging.getLogger().addHandler(lines)
    with tempfile.TemporaryDirectory() as folder:
        runtime = dataclasses.replace(runtime, cache=False, output_dir=folder)
        configure(runtime)
        result = recipe.train_and_evaluate(config, data, runtime)
    row = result.row
    report(
        {
            "machine": machine(),
            "dataset": data.name,
            "seed": config.seed,
            "threads": runtime.threads,
            "phases_s": lines.phases,
            "restarts_s": lines.restarts,
            "train_seconds": round(row["train_seconds"], 1),
            "scores": {k: round(row[k], 4) for k in ("acc", "nmi", "ari")},
        },
        FLAGS.output,
    )


if __name__ == "__main__":
    app.run(main)
