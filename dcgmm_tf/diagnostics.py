"""What training does to the clusters, epoch by epoch: a callback that records it without changing the run.

:class:`TrainingDynamics` writes one JSON line per epoch: where the samples of each class are assigned, the
posterior entropy, the cluster means and variances, and the gradient norm of each term of the loss on one fixed
data batch and one fixed batch of pairs. ``python -m experiments.dynamics`` trains with it and plots the lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from dcgmm_tf import metrics
from dcgmm_tf.constraints import ConstraintSet

TERMS = ("reconstruction", "cluster_kl", "constraint")


def class_assignments(y: np.ndarray, clusters: np.ndarray, num_clusters: int) -> np.ndarray:
    """Counts [C, K]: how many samples of class c (0..C-1 in sorted order of ``y``) are in cluster k."""
    _, classes = np.unique(y, return_inverse=True)
    counts = np.zeros((classes.max() + 1, num_clusters), np.int64)
    np.add.at(counts, (classes, clusters), 1)
    return counts


def mean_entropy(log_p: np.ndarray) -> float:
    """The mean entropy (nats) of the rows of a [N, K] matrix of log-probabilities."""
    return float(-np.mean(np.sum(np.exp(log_p) * log_p, axis=-1)))


def term_gradient_norms(model: keras.Model, x: np.ndarray, w: np.ndarray | None) -> dict[str, float]:
    """The global norm of the gradient of each loss term, over the networks' weights and over the mixture's.

    Evaluated in training mode on the batch ``(x, w)``; the model's noise generator is put back afterwards, so
    the training run continues exactly as without this call.
    """
    mixture = {id(model.cluster_means), id(model.cluster_raw_variances)}
    is_mixture = [id(v) in mixture for v in model.trainable_variables]
    variables = [v.value for v in model.trainable_variables]  # the backend's tf.Variables, which the tape watches
    state = tf.identity(model.seed_generator.state)
    with tf.GradientTape(persistent=True) as tape:
        terms = model.compute_loss_terms(x, w, training=True)
    model.seed_generator.state.assign(state)
    norms = {}
    for name in TERMS:
        grads = tape.gradient(terms[name], variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        for part, keep in (("network", False), ("mixture", True)):
            chosen = [g for g, m in zip(grads, is_mixture) if m == keep]
            norms[f"{name}_{part}"] = float(tf.linalg.global_norm(chosen))
    del tape
    return norms


class TrainingDynamics(keras.callbacks.Callback):
    """Records, after every epoch (after the callbacks before it, e.g. a restart of the mixture), one JSON line
    in ``path``.

    Each line holds ``epoch``, ``acc`` and ``counts`` (the [C, K] class-by-cluster counts of ``x``, ``y``),
    ``entropy`` (mean entropy of p(k|mu(x))), ``means`` and ``variances`` of the mixture, and
    ``grad_data``/``grad_pairs``: :func:`term_gradient_norms` on the first ``batch_size`` samples of ``x_train``
    and on the first ``batch_size // 2`` links of ``constraints`` (both ends of each). It reads the labels only
    to describe the run; the training never sees them.

    Args:
        path: the JSON-lines file (appended to).
        x: samples to describe the assignments on (e.g. the test split), with their labels ``y``.
        x_train: the training inputs that ``constraints`` index.
        constraints: the training links (an empty set: no pair batch).
        batch_size: size of the fixed batches of the gradient norms.
    """

    def __init__(
        self,
        path: str | Path,
        x: np.ndarray,
        y: np.ndarray,
        x_train: np.ndarray,
        constraints: ConstraintSet,
        batch_size: int = 256,
    ):
        super().__init__()
        self.path, self.x, self.y = Path(path), x, np.asarray(y)
        self.data_batch = x_train[:batch_size]
        self.pair_batch = None
        if len(constraints):
            order = np.random.default_rng(0).permutation(len(constraints))[: batch_size // 2]
            indices = np.concatenate([constraints.i[order], constraints.j[order]])
            self.pair_batch = (x_train[indices], constraints.submatrix(indices))

    def on_epoch_end(self, epoch, logs=None):
        model = self.model
        log_p = np.asarray(model.cluster_log_posterior(model.embed(self.x)))  # log p(k|mu(x))
        clusters = log_p.argmax(-1)
        record = {
            "epoch": epoch + 1,
            "acc": metrics.cluster_accuracy(self.y, clusters),
            "counts": class_assignments(self.y, clusters, model.num_clusters).tolist(),
            "entropy": mean_entropy(log_p),
            "means": np.asarray(model.cluster_means).tolist(),
            "variances": np.asarray(model.cluster_variances).tolist(),
            "grad_data": term_gradient_norms(model, self.data_batch, None),
        }
        if self.pair_batch is not None:
            record["grad_pairs"] = term_gradient_norms(model, *self.pair_batch)
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")


def read_dynamics(path: str | Path) -> list[dict]:
    """The records of a :class:`TrainingDynamics` file, in epoch order."""
    with Path(path).open() as f:
        return sorted((json.loads(line) for line in f if line.strip()), key=lambda r: r["epoch"])
