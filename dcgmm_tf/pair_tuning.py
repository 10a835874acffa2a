"""The pretrained autoencoder tuned with the pairs before the start (``pair_tuning_epochs``; not the paper's).

The paper starts the mixture on the embedding of a plain autoencoder, which no pair has shaped, and the start
and everything after it inherit how that embedding mixes look-alike classes. Here the encoder and decoder first
train for a few epochs on the reconstruction of each data batch plus ``weight`` times
:func:`dcgmm_tf.losses.embedding_pair_term` on a share of the pairs: must-linked ends are pulled together and
cannot-linked ends pushed apart, in units of the median distance between random embeddings before the tuning. The
C-ELBO training afterwards is unchanged, unless ``embedding_pair_weight`` keeps the same term in it
(:func:`dcgmm_tf.losses.batch_embedding_pair_term`). Measured in docs/reproduction.md.
"""

from __future__ import annotations

import logging

import keras
import numpy as np
import tensorflow as tf

from dcgmm_tf import losses
from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.model import DCGMM
from dcgmm_tf.optimizers import adam
from dcgmm_tf.pretraining import apply_on_path

SCALE_PAIRS = 20_000  # random pairs whose median embedding distance is the unit of the pair term
SEED_OFFSET = 991  # the tuning's random stream, apart from the run's others


def tune_with_pairs(
    model: DCGMM,
    x: np.ndarray,
    constraints: ConstraintSet,
    epochs: int,
    weight: float,
    seed: int,
    batch_size: int = 256,
    learning_rate: float = 1e-4,
    fused_adam: bool = False,
) -> None:
    """Trains ``model``'s encoder mean and decoder on reconstruction plus ``weight`` x the pairs' embedding term.

    Each epoch goes once through the shuffled data in batches of ``batch_size`` and once through the shuffled
    pairs, shared out over those batches (at least once each); a pair's strength is its |W| relative to the
    largest.

    Args:
      model: A pretrained model; its encoder and decoder change in place (the mixture does not).
      x: The training inputs the pairs index.
      constraints: The pairs (at least one).
      epochs: Epochs of tuning (0: nothing changes).
      weight: Weight of the pair term against the mean reconstruction loss.
      seed: Seed of the shuffling and of the scale's random pairs.
      batch_size: Data samples per step.
      learning_rate: Adam's step size.
      fused_adam: Adam as :class:`dcgmm_tf.optimizers.FusedAdam` (off: Keras' Adam).

    Raises:
      ValueError: On negative epochs, a weight that is not positive, or no pairs.
    """
    if epochs < 0:
        raise ValueError(f"pair tuning epochs must be >= 0, got {epochs}")
    if not weight > 0:
        raise ValueError(f"the pair tuning weight must be > 0, got {weight}")
    if epochs == 0:
        return
    if len(constraints) == 0:
        raise ValueError("pair tuning needs at least one pair")
    rng = np.random.default_rng(seed + SEED_OFFSET)
    z = model.embed(x)
    first, second = rng.integers(0, len(x), SCALE_PAIRS), rng.integers(0, len(x), SCALE_PAIRS)
    scale = float(np.median(np.linalg.norm(z[first] - z[second], axis=1)))
    ends_i, ends_j = np.asarray(constraints.i), np.asarray(constraints.j)
    w = np.asarray(constraints.weight, np.float32)
    must = (w > 0).astype(np.float32)
    strength = np.abs(w) / np.abs(w).max()  # float32, as w
    optimizer = adam(learning_rate, fused_adam)
    if keras.mixed_precision.global_policy().name == "mixed_float16":  # as Keras' compile does for the pretraining
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    variables = model.encoder.trainable_variables + model.decoder.trainable_variables

    @tf.function
    def step(x_batch, x_i, x_j, must_batch, strength_batch):
        with tf.GradientTape() as tape:
            params = model.decoder(model.encoder(x_batch, training=True)[0], training=True)
            reconstruction = tf.reduce_mean(losses.reconstruction_nll(x_batch, params, model.likelihood))
            z_i = model.encoder(x_i, training=True)[0]
            z_j = model.encoder(x_j, training=True)[0]
            pair = losses.embedding_pair_term(z_i, z_j, must_batch, strength_batch, scale)
            loss = reconstruction + weight * pair
            scaled = optimizer.scale_loss(loss)  # the loss itself unless fp16's loss scaling
        apply_on_path(optimizer, tape, scaled, variables)
        return reconstruction, pair

    num_batches = -(-len(x) // batch_size)
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        # Fewer pairs than batches: the chunks (one pair each) repeat, so every step has pairs.
        chunks = np.array_split(rng.permutation(len(ends_i)), min(num_batches, len(ends_i)))
        totals = np.zeros(2)
        for b in range(num_batches):
            chunk = chunks[b % len(chunks)]
            x_batch = x[order[b * batch_size : (b + 1) * batch_size]]
            terms = step(x_batch, x[ends_i[chunk]], x[ends_j[chunk]], must[chunk], strength[chunk])
            totals += [float(t) for t in terms]
        logging.info(
            "pair tuning epoch %d/%d: reconstruction %.2f, pair term %.4f",
            epoch + 1,
            epochs,
            *(totals / num_batches),
        )
