"""Pretraining (Sec. 4): an autoencoder on the encoder-mean / decoder path (:func:`pretrain`), then the start
of the mixture on the embeddings (:func:`start_mixture`: the paper's diagonal GMM, a start from the constraints,
or one from labels)."""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from dcgmm_tf import losses, starts, validation
from dcgmm_tf.config import CLUSTER_INITS, LATENT_CLASS_STARTS, LINK_START_STRATEGIES
from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.data.pipeline import prefetch_without_autotune, shuffled_batches
from dcgmm_tf.fitting import steps_per_call
from dcgmm_tf.model import DCGMM
from dcgmm_tf.optimizers import adam
from dcgmm_tf.storage import exclusive, read_checked, write_atomically


def apply_on_path(optimizer: keras.optimizers.Optimizer, tape: tf.GradientTape, loss: tf.Tensor, variables) -> None:
    """One step of ``optimizer`` on the gradients of ``loss``, skipping the variables off its path (the encoder's
    log-variance head when the loss uses the embedding means alone)."""
    used = [(g, v) for g, v in zip(tape.gradient(loss, variables), variables) if g is not None]
    optimizer.apply([g for g, _ in used], [v for _, v in used])


class _Autoencoder(keras.Model):
    """x -> mu(x) -> decoder, trained on -log p(x | z = mu(x)); shares its layers with the DC-GMM."""

    def __init__(self, encoder: keras.layers.Layer, decoder: keras.layers.Layer, likelihood: str, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.decoder = decoder
        self.likelihood = likelihood
        self.loss_tracker = keras.metrics.Mean(name="reconstruction")

    @property
    def metrics(self):
        return [self.loss_tracker]

    def load_own_variables(self, store):
        # It has no variables of its own: the weights of a whole DC-GMM (a cache written before the cache held the
        # autoencoder alone) load too, their mixture (of any K) left out.
        del store

    def call(self, x, training=False):
        return self.decoder(self.encoder(x, training=training)[0], training=training)

    def train_step(self, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(losses.reconstruction_nll(x, self(x, training=True), self.likelihood))
        apply_on_path(self.optimizer, tape, loss, self.trainable_variables)
        self.loss_tracker.update_state(loss)
        return {"reconstruction": self.loss_tracker.result()}


def pretrain_autoencoder(
    model: DCGMM,
    x: np.ndarray,
    epochs: int = 10,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    seed: int = 0,
    verbose: int | str = "auto",
    steps_per_execution: int | None = None,
    fused_adam: bool = False,
) -> None:
    """Train ``model``'s encoder mean and decoder as a plain autoencoder.

    ``steps_per_execution`` steps run per compiled call (None: :func:`dcgmm_tf.fitting.steps_per_call`'s choice);
    the weights do not depend on it (tested), only the time does (Keras' loop runs once per call). ``fused_adam``
    takes :class:`dcgmm_tf.optimizers.FusedAdam` instead of Keras' Adam (the same update in less time, to rounding).
    """
    if epochs < 0:
        raise ValueError(f"pretraining epochs must be >= 0, got {epochs}")
    if epochs == 0:
        return
    autoencoder = _Autoencoder(model.encoder, model.decoder, model.likelihood, name="autoencoder")
    steps_per_execution = steps_per_call(epochs * math.ceil(len(x) / batch_size), steps_per_execution)
    autoencoder.compile(optimizer=adam(learning_rate, fused_adam), steps_per_execution=steps_per_execution)
    autoencoder.optimizer.build(autoencoder.trainable_variables)  # made in its first step, they would trace it twice
    data = prefetch_without_autotune(shuffled_batches(x, batch_size, seed))  # float32, aligned, inside
    autoencoder.fit(data, epochs=epochs, verbose=verbose, shuffle=False)  # shuffled above


def fit_cluster_prior(model: DCGMM, x: np.ndarray, seed: int = 0, z: np.ndarray | None = None) -> np.ndarray:
    """Fit a diagonal GMM to the embeddings mu(x) (``z`` when computed already) and copy its means and variances
    into ``model``.

    Returns the GMM's cluster assignment of each row of ``x``.
    """
    start = starts.gmm_start(model.embed(x) if z is None else z, model.num_clusters, seed)
    model.set_cluster_parameters(start.means, start.variances)
    return start.assignments


def cluster_prior_from_labels(model: DCGMM, x: np.ndarray, y: np.ndarray) -> None:
    """Diagnostic: set mu_k, sigma_k^2 to the mean and variance of mu(x) over the samples of class k (variances
    floored at twice the model's ``min_variance``).

    Not a clustering method (it reads the labels): it shows what training reaches from a mixture whose
    components start aligned with the classes, as opposed to the unsupervised GMM of
    :func:`fit_cluster_prior`. Needs labels ``0 .. num_clusters - 1`` with at least two samples each.
    """
    y = np.asarray(y)
    valid = y.ndim == 1 and len(y) == len(x) and np.issubdtype(y.dtype, np.integer)
    counts = np.bincount(y[(y >= 0) & (y < model.num_clusters)], minlength=model.num_clusters) if valid else None
    if not valid or counts.sum() != len(y) or counts.min() < 2:
        raise ValueError(
            f"labels must be one integer in [0, {model.num_clusters}) per sample of x with at least two "
            f"samples per class; got {y.shape} labels" + ("" if counts is None else f", class counts {counts.tolist()}")
        )
    z = model.embed(x)
    means = np.stack([z[y == k].mean(axis=0) for k in range(model.num_clusters)])
    variances = np.stack([z[y == k].var(axis=0) for k in range(model.num_clusters)])
    model.set_cluster_parameters(means, np.maximum(variances, 2 * model.min_variance))


def load_cached_weights(model: keras.Model, cache_path: str | os.PathLike | None) -> bool:
    """Load ``cache_path`` (a ``.weights.h5`` file) into ``model`` if it exists; True when it did.

    A damaged cache (truncated, emptied, not matching its checksum, unreadable, or the weights of another model)
    is reported in one warning and not used: the model keeps its weights and the caller builds the cache again.
    """
    if cache_path is None:
        return False
    cache_path = Path(cache_path)
    if not cache_path.name.endswith(".weights.h5"):
        raise ValueError(f"cache_path must end in .weights.h5, got {cache_path}")
    if not cache_path.exists():
        return False
    before = model.get_weights()
    _, problem = read_checked(cache_path, model.load_weights)
    if problem is None:
        return True
    model.set_weights(before)  # a load that failed half-way leaves no trace
    logging.warning("the cache %s is damaged: %s; building it again and replacing it", cache_path, problem)
    return False


def save_cached_weights(model: keras.Model, cache_path: str | os.PathLike | None) -> None:
    """Write ``model``'s weights to ``cache_path`` atomically, with a checksum to detect damage on reading."""
    if cache_path is None:
        return
    write_atomically(cache_path, model.save_weights, checksum=True)


def pretrain(
    model: DCGMM,
    x: np.ndarray,
    *,
    epochs: int = 10,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    seed: int = 0,
    cache_path: str | os.PathLike | None = None,
    verbose: int | str = "auto",
    fused_adam: bool = False,
) -> bool:
    """Autoencoder pretraining of ``model``'s encoder mean and decoder, reusing ``cache_path`` if present.

    The mixture is left as it is: set it next with :func:`start_mixture`. The cache (``.weights.h5``) holds the
    encoder and decoder weights alone; a whole model's weights load as well, their mixture not used (caches
    written before, some with a fitted GMM).

    Args:
      model: The DC-GMM whose networks are pretrained.
      x: The training data, checked with :func:`dcgmm_tf.validation.check_data` against the model (shape,
        likelihood, number of clusters).
      epochs: Pretraining epochs.
      batch_size: Pretraining batch size.
      learning_rate: Adam's learning rate.
      seed: Seed of the shuffling.
      cache_path: The cache file (None: no cache).
      verbose: Keras verbosity.
      fused_adam: Adam as :class:`dcgmm_tf.optimizers.FusedAdam` (off: Keras' Adam).

    Returns:
      True when the weights came from the cache.
    """
    x = validation.check_data(
        x, num_clusters=model.num_clusters, likelihood=model.likelihood, sample_shape=model.sample_shape
    )
    return pretrain_checked(
        model,
        x,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        seed=seed,
        cache_path=cache_path,
        verbose=verbose,
        fused_adam=fused_adam,
    )


def pretrain_checked(
    model: DCGMM,
    x: np.ndarray,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float = 1e-3,
    seed: int,
    cache_path: str | os.PathLike | None,
    verbose: int | str,
    fused_adam: bool = False,
) -> bool:
    """:func:`pretrain` for data checked already (by :func:`dcgmm_tf.recipe.prepare_run`).

    The cache holds the encoder and decoder alone (they do not depend on K).
    """
    autoencoder = _Autoencoder(model.encoder, model.decoder, model.likelihood, name="autoencoder")
    autoencoder.built = True  # its layers are the model's, built already
    with exclusive(cache_path):  # processes sharing the cache: one pretrains, the others then load its file
        if load_cached_weights(autoencoder, cache_path):
            return True
        pretrain_autoencoder(
            model,
            x,
            epochs=epochs,
            batch_size=batch_size,
            learning_rate=learning_rate,
            seed=seed,
            verbose=verbose,
            fused_adam=fused_adam,
        )
        save_cached_weights(autoencoder, cache_path)
    return False


def labelled_subset(y: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """Indices of ``per_class`` random samples of each class of ``y`` (all indices when 0); sorted."""
    if not per_class:
        return np.arange(len(y))
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(y, return_counts=True)
    if counts.min() < per_class:
        raise ValueError(
            f"init_labels_per_class={per_class} but class {classes[counts.argmin()]} has only "
            f"{counts.min()} training samples"
        )
    return np.sort(np.concatenate([rng.choice(np.flatnonzero(y == c), per_class, replace=False) for c in classes]))


def start_mixture(
    model: DCGMM,
    x: np.ndarray,
    strategy: str = "latent_class",
    constraints: ConstraintSet | None = None,
    *,
    labels: np.ndarray | None = None,
    labels_per_class: int = 0,
    num_components: int | None = None,
    seed: int = 0,
    gmm_seed: int | None = None,
    em_starts: int = LATENT_CLASS_STARTS,
) -> None:
    """Sets ``model``'s initial mixture from its embeddings of ``x``: the one dispatcher of the starts.

    Args:
      model: The pretrained model.
      x: The training data.
      strategy: ``gmm`` (the paper's GMM), ``kmeans`` (not the paper's: k-means clusters, see
        :func:`dcgmm_tf.starts.kmeans_start`), ``merge`` or ``latent_class`` (GMM components grouped by the
        constraints; without constraints the GMM), or ``labels`` (:func:`cluster_prior_from_labels`).
      constraints: The constraints, indexing the rows of ``x``.
      labels: The labels of ``x`` (``labels`` only).
      labels_per_class: Use this many labelled samples per class (``labels`` only; 0: all).
      num_components: K' of ``merge`` and ``latent_class`` (None: automatic).
      seed: Seed of the constrained starts and of the labelled subset.
      gmm_seed: Seed of the GMM and of k-means (default: ``seed``); the pretraining's, so that runs sharing a
        pretrained model share its label-free start.
      em_starts: Random starts of ``latent_class``'s EM (see :func:`dcgmm_tf.starts.latent_class_start`).
    """
    if strategy not in CLUSTER_INITS:
        raise ValueError(f"strategy must be one of {CLUSTER_INITS}, got {strategy!r}")
    if strategy == "labels":
        labelled = labelled_subset(labels, labels_per_class, seed)
        cluster_prior_from_labels(model, x[labelled], labels[labelled])
        logging.info("mixture initialised from the labels of %d training samples", len(labelled))
        return
    linked = strategy in LINK_START_STRATEGIES and constraints is not None and len(constraints) > 0
    z = model.embed(x)  # once: one pass of the encoder over x is what the start costs most at large N
    label_free_seed = seed if gmm_seed is None else gmm_seed
    if strategy == "kmeans":
        starts.init_clusters(model, x, None, strategy, seed=label_free_seed, z=z)
        logging.info("mixture initialised by k-means")
        return
    if not linked or strategy == "latent_class":  # the start, or the clusters that latent_class starts from
        fit_cluster_prior(model, x, seed=label_free_seed, z=z)
    if linked:
        starts.init_clusters(model, x, constraints, strategy, num_components, seed, z=z, em_starts=em_starts)
        logging.info("mixture initialised by %s", strategy)
