"""DEC-based constrained clustering baselines: SDEC (Ren et al. 2019) and C-IDEC (Zhang, Basu & Davidson 2019).

Both put a Student-t clustering layer (DEC, Xie et al. 2016) on the embedding of a pretrained encoder and
train against the sharpened target distribution P, refreshed once per epoch; training stops when fewer than
``tol`` of the assignments change between two refreshes.

- SDEC adds ``lambda * (sum_ML ||z_i - z_j||^2 - sum_CL ||z_i - z_j||^2) / n_pairs`` to the clustering loss.
- C-IDEC trains ``MSE reconstruction + gamma * KL(P||Q)`` (IDEC), then makes one pass over the must-links
  minimising ``-log sum_k q_ik q_jk`` and one over the cannot-links minimising ``-log(1 - sum_k q_ik q_jk)``.

Numerics: all losses work on ``log q`` (a log-softmax). ``log sum_k q_ik q_jk`` is a logsumexp of
``log q_i + log q_j``. For the cannot-link loss, ``1 - sum_k q_ik q_jk = sum_k q_ik (1 - q_jk)`` because
``sum_k q_ik = 1``, and ``log(1 - q_jk) = logsumexp_{l != k} log q_jl``; so ``log(1 - s)`` is a logsumexp of
log-probabilities too and stays finite and exact when ``s`` rounds to 1, with no clipping and no epsilon.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf
from keras import ops
from sklearn.cluster import KMeans

from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.data.pipeline import padded_rows, prefetch_without_autotune


def student_t_log_assignments(z: tf.Tensor, centers: tf.Tensor, alpha: float = 1.0) -> tf.Tensor:
    """``log q_ik`` with ``q_ik`` proportional to ``(1 + ||z_i - mu_k||^2 / alpha)^(-(alpha + 1) / 2)``."""
    squared = ops.sum(ops.square(ops.expand_dims(z, 1) - ops.expand_dims(centers, 0)), axis=-1)
    return ops.log_softmax(-(alpha + 1.0) / 2.0 * ops.log1p(squared / alpha), axis=-1)


def target_distribution(q: np.ndarray) -> np.ndarray:
    """DEC's auxiliary target ``p_ik = (q_ik^2 / f_k) / sum_k' (q_ik'^2 / f_k')`` with ``f_k = sum_i q_ik``."""
    q = np.asarray(q, np.float64)
    weight = q**2 / q.sum(axis=0)
    return (weight / weight.sum(axis=1, keepdims=True)).astype(np.float32)


def clustering_kl(p: tf.Tensor | np.ndarray, log_q: tf.Tensor) -> tf.Tensor:
    """``KL(P || Q)`` averaged over the rows; ``p`` is a constant target (terms with ``p = 0`` are 0)."""
    p = ops.convert_to_tensor(p, dtype=log_q.dtype)
    positive = p > 0
    log_p = ops.log(ops.where(positive, p, ops.ones_like(p)))
    return ops.mean(ops.sum(ops.where(positive, p * (log_p - log_q), ops.zeros_like(p)), axis=-1))


def pairwise_distance_loss(z_i: tf.Tensor, z_j: tf.Tensor, sign: tf.Tensor | np.ndarray) -> tf.Tensor:
    """SDEC's ``sum_pairs sign * ||z_i - z_j||^2 / n_pairs`` (``sign`` +1 for must-links, -1 for cannot-links)."""
    z_i, z_j = ops.cast(z_i, "float32"), ops.cast(z_j, "float32")  # float32 also under mixed precision
    sign = ops.convert_to_tensor(sign, dtype=z_i.dtype)
    return ops.mean(sign * ops.sum(ops.square(z_i - z_j), axis=-1))


def log_same_cluster(log_q_i: tf.Tensor, log_q_j: tf.Tensor) -> tf.Tensor:
    """``log sum_k q_ik q_jk``: the log-probability that two samples fall in the same cluster."""
    return ops.logsumexp(log_q_i + log_q_j, axis=-1)


def log_different_cluster(log_q_i: tf.Tensor, log_q_j: tf.Tensor) -> tf.Tensor:
    """``log(1 - sum_k q_ik q_jk)`` computed as ``logsumexp_k(log q_ik + logsumexp_{l != k} log q_jl)``."""
    num_clusters = log_q_j.shape[-1]
    diagonal = ops.cast(ops.eye(num_clusters), "bool")
    others = ops.where(diagonal, -math.inf, ops.expand_dims(log_q_j, -2))  # [B, K, K]: row k without l = k
    return ops.logsumexp(log_q_i + ops.logsumexp(others, axis=-1), axis=-1)


def must_link_loss(log_q_i: tf.Tensor, log_q_j: tf.Tensor) -> tf.Tensor:
    """C-IDEC's must-link loss ``mean(-log sum_k q_ik q_jk)``."""
    return -ops.mean(log_same_cluster(log_q_i, log_q_j))


def cannot_link_loss(log_q_i: tf.Tensor, log_q_j: tf.Tensor) -> tf.Tensor:
    """C-IDEC's cannot-link loss ``mean(-log(1 - sum_k q_ik q_jk))``."""
    return -ops.mean(log_different_cluster(log_q_i, log_q_j))


@keras.saving.register_keras_serializable(package="dcgmm_tf")
class ClusteringLayer(keras.layers.Layer):
    """DEC's clustering layer: Student-t soft assignments ``q`` of embeddings to ``num_clusters`` trainable centres."""

    def __init__(self, num_clusters: int, alpha: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.num_clusters, self.alpha = int(num_clusters), float(alpha)

    def build(self, input_shape):
        # autocast=False: under mixed precision the centres and the assignments stay float32, as DC-GMM's mixture.
        self.centers = self.add_weight(
            shape=(self.num_clusters, input_shape[-1]), initializer="glorot_uniform", name="centers", autocast=False
        )

    def log_assignments(self, z):
        """``log q`` of shape ``[B, K]``, in float32 (also for the bf16 or fp16 embeddings of mixed precision)."""
        return student_t_log_assignments(ops.cast(z, "float32"), self.centers, self.alpha)

    def call(self, z):
        return ops.exp(self.log_assignments(z))

    def get_config(self):
        return {**super().get_config(), "num_clusters": self.num_clusters, "alpha": self.alpha}


def shuffled_batches(
    arrays: dict[str, np.ndarray],
    batch_size: int,
    rng: np.random.Generator,
    batch_order: random.Random,
    extra: dict[str, np.ndarray] | None = None,
) -> tf.data.Dataset:
    """One epoch of shuffled mini-batches of a dict of equally long arrays, optionally zipped with a cycled second
    dict, as a tf.data graph (Python once per epoch: the orders; the rows are gathered by TensorFlow ops).

    The rows of batch ``b`` are ``order[b * batch_size:(b + 1) * batch_size]`` for ``order = rng.permutation(n)``
    (the extra dict's rows: consecutive chunks of its cycled permutations), and the batches come in an order
    shuffled by ``batch_order`` (Python's ``random``): the batches, in the order, that Keras made of these arrays
    as a ``PyDataset`` before (``fit``'s ``shuffle``), so the baselines' results stay what they were.
    """
    n = len(next(iter(arrays.values())))
    order = rng.permutation(n)
    num_batches = math.ceil(n / batch_size)
    parts = [(arrays, [order[b * batch_size : (b + 1) * batch_size] for b in range(num_batches)])]
    if extra:
        size = len(next(iter(extra.values())))
        extra_batch = math.ceil(size / num_batches)
        reps = math.ceil(extra_batch * num_batches / size)
        extra_order = np.concatenate([rng.permutation(size) for _ in range(reps)])
        parts.append((extra, [extra_order[b * extra_batch : (b + 1) * extra_batch] for b in range(num_batches)]))
    sequence = list(range(num_batches))
    batch_order.shuffle(sequence)
    slices, gathers = {}, []
    for number, (source, rows) in enumerate(parts):
        lengths = np.array([len(rows[b]) for b in sequence], np.int64)
        slices[f"rows{number}"] = padded_rows(np.concatenate([rows[b] for b in sequence]).astype(np.int64), lengths)
        slices[f"lengths{number}"] = lengths
        gathers.append({name: tf.constant(value) for name, value in source.items()})

    def batch(element: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        out = {}
        for number, tensors in enumerate(gathers):
            rows = element[f"rows{number}"][: element[f"lengths{number}"]]
            out.update({name: tf.gather(tensor, rows) for name, tensor in tensors.items()})
        return out

    return prefetch_without_autotune(tf.data.Dataset.from_tensor_slices(slices).map(batch))


def pair_arrays(x: np.ndarray, constraints: ConstraintSet) -> dict[str, np.ndarray]:
    """Features of both ends of each constraint (``x_i``, ``x_j``) and its sign (+1 must, -1 cannot)."""
    return {"x_i": x[constraints.i], "x_j": x[constraints.j], "sign": np.sign(constraints.weight).astype(np.float32)}


class DECModel(keras.Model):
    """Encoder plus :class:`ClusteringLayer`; ``predict`` gives the soft assignments ``q``.

    Subclasses define the losses (``train_step``) and what one epoch trains on (``train_epoch``).
    """

    loss_names: tuple[str, ...] = ("loss",)

    def __init__(self, encoder: keras.layers.Layer, num_clusters: int, alpha: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.clustering = ClusteringLayer(num_clusters, alpha, name="clustering")
        self.trackers = {name: keras.metrics.Mean(name=name) for name in self.loss_names}

    @property
    def metrics(self):
        return list(self.trackers.values())

    def call(self, x, training=False):
        return self.clustering(self.encoder(x, training=training))

    def log_assignments(self, x, training=False):
        return self.clustering.log_assignments(self.encoder(x, training=training))

    def _apply(self, tape: tf.GradientTape, loss, values: dict) -> dict:
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(
            [g for g in grads if g is not None], [v for g, v in zip(grads, self.trainable_variables) if g is not None]
        )
        for name, value in values.items():
            self.trackers[name].update_state(value)
        return {name: self.trackers[name].result() for name in values}

    def initialize_centers(self, x: np.ndarray, seed: int = 0, n_init: int = 10) -> np.ndarray:
        """k-means on the embeddings sets the cluster centres (as in DEC); returns the k-means labels."""
        z = self.encoder.predict(x, batch_size=1024, verbose=0)
        kmeans = KMeans(self.clustering.num_clusters, n_init=n_init, random_state=seed).fit(z)
        self(x[:1])  # builds the clustering layer
        self.clustering.centers.assign(kmeans.cluster_centers_.astype(np.float32))
        return kmeans.labels_

    def train_epoch(
        self,
        x: np.ndarray,
        p: np.ndarray,
        constraints: ConstraintSet,
        batch_size: int,
        rng: np.random.Generator,
        batch_order: random.Random,
    ) -> dict[str, float]:
        raise NotImplementedError

    def fit_clusters(
        self,
        x: np.ndarray,
        constraints: ConstraintSet,
        epochs: int,
        batch_size: int = 256,
        tol: float = 1e-3,
        seed: int = 0,
        callback: Callable[[int, dict], None] | None = None,
        batch_order: random.Random | None = None,
    ) -> list[dict]:
        """Alternate target refreshes and training epochs until ``tol`` or ``epochs``; returns one log per epoch.

        The samples of each batch follow ``seed``; the order of the batches follows ``batch_order`` (default:
        ``random.Random(seed)``). ``callback(epoch, log)``, if given, runs after each epoch (e.g. to evaluate on a
        test split).
        """
        rng = np.random.default_rng(seed)
        batch_order = random.Random(seed) if batch_order is None else batch_order
        history, previous = [], None
        for epoch in range(1, epochs + 1):
            q = self.predict(x, batch_size=1024, verbose=0)
            labels = q.argmax(axis=1)
            changed = float("nan") if previous is None else float(np.mean(labels != previous))
            if changed < tol:
                history.append({"epoch": epoch, "changed": changed, "stopped": True})
                break
            previous = labels
            log = {
                "epoch": epoch,
                "changed": changed,
                "stopped": False,
                **self.train_epoch(x, target_distribution(q), constraints, batch_size, rng, batch_order),
            }
            if callback is not None:
                callback(epoch, log)
            history.append(log)
        return history


class SDEC(DECModel):
    """Semi-supervised DEC: ``KL(P||Q) + pair_weight * pairwise_distance_loss`` on the encoder's embedding.

    Each step sees a batch of samples for the KL term and a batch of constraint pairs, sized so that one epoch
    visits every pair once; the pair term's gradient flows through the encoder on both ends of each pair.
    """

    loss_names = ("loss", "cluster_kl", "pairwise")

    def __init__(
        self, encoder: keras.layers.Layer, num_clusters: int, pair_weight: float = 1e-5, alpha: float = 1.0, **kwargs
    ):
        super().__init__(encoder, num_clusters, alpha, **kwargs)
        self.pair_weight = float(pair_weight)

    def train_step(self, data):
        with tf.GradientTape() as tape:
            kl = clustering_kl(data["p"], self.log_assignments(data["x"], training=True))
            if "x_i" in data:
                pairwise = pairwise_distance_loss(
                    self.encoder(data["x_i"], training=True), self.encoder(data["x_j"], training=True), data["sign"]
                )
            else:
                pairwise = ops.zeros_like(kl)
            loss = kl + self.pair_weight * pairwise
        return self._apply(tape, loss, {"loss": loss, "cluster_kl": kl, "pairwise": pairwise})

    def train_epoch(self, x, p, constraints, batch_size, rng, batch_order):
        pairs = pair_arrays(x, constraints) if len(constraints) else None
        history = self.fit(
            shuffled_batches({"x": x, "p": p}, batch_size, rng, batch_order, extra=pairs),
            epochs=1,
            verbose=0,
            shuffle=False,
        )
        return {name: values[-1] for name, values in history.history.items()}


class CIDEC(DECModel):
    """Constrained IDEC: ``reconstruction + gamma * KL(P||Q)`` per data batch, then one pass over the must-links
    (``ml_penalty * must_link_loss``) and one over the cannot-links (``cl_penalty * cannot_link_loss``)."""

    loss_names = ("loss", "reconstruction", "cluster_kl", "must_link", "cannot_link")

    def __init__(
        self,
        encoder: keras.layers.Layer,
        decoder: keras.layers.Layer,
        num_clusters: int,
        gamma: float = 0.1,
        ml_penalty: float = 0.1,
        cl_penalty: float = 1.0,
        alpha: float = 1.0,
        **kwargs,
    ):
        super().__init__(encoder, num_clusters, alpha, **kwargs)
        self.decoder = decoder
        self.gamma, self.ml_penalty, self.cl_penalty = float(gamma), float(ml_penalty), float(cl_penalty)

    def train_step(self, data):
        with tf.GradientTape() as tape:
            if "p" in data:  # IDEC batch
                z = self.encoder(data["x"], training=True)
                decoded = ops.cast(self.decoder(z, training=True), "float32")  # also under mixed precision
                reconstruction = ops.mean(ops.square(decoded - data["x"]))
                kl = clustering_kl(data["p"], self.clustering.log_assignments(z))
                loss = reconstruction + self.gamma * kl
                values = {"reconstruction": reconstruction, "cluster_kl": kl}
            elif "ml_i" in data:  # must-link batch
                pair = must_link_loss(
                    self.log_assignments(data["ml_i"], training=True), self.log_assignments(data["ml_j"], training=True)
                )
                loss, values = self.ml_penalty * pair, {"must_link": pair}
            else:  # cannot-link batch
                pair = cannot_link_loss(
                    self.log_assignments(data["cl_i"], training=True), self.log_assignments(data["cl_j"], training=True)
                )
                loss, values = self.cl_penalty * pair, {"cannot_link": pair}
        return self._apply(tape, loss, {"loss": loss, **values})

    def train_epoch(self, x, p, constraints, batch_size, rng, batch_order):
        history = self.fit(
            shuffled_batches({"x": x, "p": p}, batch_size, rng, batch_order), epochs=1, verbose=0, shuffle=False
        )
        log = {name: values[-1] for name, values in history.history.items() if name != "loss"}
        for kind, mask in (("ml", constraints.must_link_mask), ("cl", constraints.cannot_link_mask)):
            if mask.any():
                pairs = {f"{kind}_i": x[constraints.i[mask]], f"{kind}_j": x[constraints.j[mask]]}
                history = self.fit(
                    shuffled_batches(pairs, batch_size, rng, batch_order), epochs=1, verbose=0, shuffle=False
                )
                name = "must_link" if kind == "ml" else "cannot_link"
                log[name] = history.history[name][-1]
        return log
