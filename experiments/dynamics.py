r"""Train one run with :class:`dcgmm_tf.diagnostics.TrainingDynamics` and plot what happens to the clusters.

    python -m experiments.dynamics --seed=1 --threads=1 --epochs=40 --output_dir=results/dynamics

The flags are ``experiments.run``'s; the run is the same as there (same row in ``results.csv``), plus
``<run folder>/dynamics.jsonl`` (one line per epoch) and ``dynamics.png``: the test ACC and, per class, the share
of its samples in the cluster that holds most of them; the mean posterior entropy; how far each cluster mean
moved in the epoch; and the gradient norm of each loss term on a fixed data batch and a fixed batch of pairs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from absl import app

from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.validation import exit_on_user_error
from experiments.run import FLAGS, configs


def plot_dynamics(records: list[dict], path: Path, title: str = "") -> None:
    """The four panels of ``dynamics.png`` from the records of a ``dynamics.jsonl``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = [r["epoch"] for r in records]
    counts = np.array([r["counts"] for r in records], float)  # [E, C, K]
    held = counts.max(-1) / counts.sum(-1)  # [E, C]: share of each class in its largest cluster
    means = np.array([r["means"] for r in records])  # [E, K, D]
    moved = np.linalg.norm(np.diff(means, axis=0), axis=-1)  # [E - 1, K]
    fig, axes = plt.subplots(4, 1, figsize=(8, 12), sharex=True)
    axes[0].plot(epochs, [r["acc"] for r in records], "k-", lw=2, label="test ACC")
    for c in range(held.shape[1]):
        axes[0].plot(epochs, held[:, c], lw=0.8, label=f"class {c}")
    axes[0].set_ylabel("share of the class\nin its largest cluster")
    axes[0].legend(fontsize=6, ncol=4)
    axes[1].plot(epochs, [r["entropy"] for r in records])
    axes[1].set_ylabel("mean entropy of\np(k|mu(x)) (nats)")
    axes[2].plot(epochs[1:], moved, lw=0.8)
    axes[2].set_ylabel("distance each cluster\nmean moved")
    for key, style in (("grad_data", "-"), ("grad_pairs", "--")):
        if key not in records[0]:
            continue
        for name in records[0][key]:
            values = [r[key][name] for r in records]
            if max(values) > 0:  # e.g. the pair term on a data batch, or the reconstruction's mixture part: 0
                axes[3].semilogy(epochs, values, style, lw=0.8, label=f"{name} ({key[5:]} batch)")
    axes[3].set_ylabel("gradient norm")
    axes[3].set_xlabel("epoch")
    axes[3].legend(fontsize=6, ncol=2)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def record(config: RunConfig, runtime: RuntimeConfig) -> Path | None:
    """Trains the run of ``config`` as ``experiments.run`` does (its row into ``<output_dir>/results.csv``), with
    :class:`dcgmm_tf.diagnostics.TrainingDynamics` recording every epoch; writes ``dynamics.jsonl`` and
    ``dynamics.png`` into the run's folder and returns that folder, or None when the row was there already."""
    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.diagnostics import TrainingDynamics, read_dynamics
    from dcgmm_tf.prepared import run_dir_of
    from experiments import runs

    data = load_dataset(config.dataset, runtime.data_dir, image_size=config.image_size)
    run_dir = run_dir_of(config, data.name, runtime)
    path = run_dir / "dynamics.jsonl"
    if path.exists():  # a rerun (or a resumed one) writes the whole record again
        path.unlink()

    def callbacks(run):
        inputs = run.inputs
        return [
            TrainingDynamics(
                path, inputs.x_test, inputs.y_test, inputs.x_train, run.constraints, batch_size=config.batch_size
            )
        ]

    row = runs.run_once(config, data, runtime, Path(runtime.output_dir) / "results.csv", callbacks=callbacks)
    if row is None:
        return None
    plot_dynamics(read_dynamics(path), run_dir / "dynamics.png", title=f"{data.name}, seed {config.seed}")
    return run_dir


def main(argv):
    del argv
    from dcgmm_tf.runtime import configure

    config, runtime = configs(FLAGS)
    configure(runtime)
    run_dir = record(config, runtime)
    if run_dir is None:
        print("this run is already in results.csv; remove its row to record it again", file=sys.stderr)
        return
    print(f"wrote {run_dir / 'dynamics.jsonl'} and {run_dir / 'dynamics.png'}")


if __name__ == "__main__":
    app.run(exit_on_user_error(main))
