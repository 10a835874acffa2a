"""tf.data pipelines yielding ``(x_batch, W_batch)`` for training DC-GMM."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from dcgmm_tf.constraints import ConstraintSet

LAYOUTS = ("separate", "spread", "none")


def _pair_batches(constraints: ConstraintSet, order: np.ndarray, pairs_per_batch: int) -> list[np.ndarray]:
    """Sample indices of consecutive chunks of pairs (in ``order``), both ends of each pair in one chunk."""
    return [np.concatenate([constraints.i[chosen], constraints.j[chosen]])
            for chosen in (order[s:s + pairs_per_batch] for s in range(0, len(order), pairs_per_batch))]


def epoch_batches(num_samples: int, constraints: ConstraintSet, batch_size: int, rng: np.random.Generator,
                  layout: str = "separate") -> list[np.ndarray]:
    """Index batches of one epoch, in random order.

    Every sample appears once in the shuffled data batches, and every constrained pair once with both of
    its ends in the same batch (a random batch rarely holds both ends of a pair, so the pairwise term
    would almost never fire otherwise). ``layout`` says where the pairs go:

    - ``"separate"`` (the paper's): extra batches of ``batch_size // 2`` pairs.
    - ``"spread"``: the pairs are shared out over all batches, each batch holding ``batch_size`` samples
      of which about ``2 * num_pairs / num_batches`` are pair ends; every step then sees both kinds of
      terms, which keeps Adam's moment estimates steady.
    - ``"none"``: data batches only.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    order = rng.permutation(num_samples)
    num_pairs = len(constraints) if layout != "none" else 0
    pair_order = rng.permutation(num_pairs)
    if layout == "spread" and num_pairs:
        num_batches = -(-num_samples // batch_size)
        pairs_per_batch = -(-num_pairs // num_batches)
        data_per_batch = batch_size - 2 * pairs_per_batch
        if data_per_batch < 1:
            raise ValueError(f"{num_pairs} pairs do not fit in {num_batches} batches of {batch_size}; "
                             "use layout='separate' or a larger batch size")
        num_batches = -(-num_samples // data_per_batch)
        pairs_per_batch = -(-num_pairs // num_batches)
        data = [order[s:s + data_per_batch] for s in range(0, num_samples, data_per_batch)]
        pairs = _pair_batches(constraints, pair_order, pairs_per_batch)
        pairs += [np.empty(0, np.int64)] * (len(data) - len(pairs))
        return [np.concatenate([d, p]) for d, p in zip(data, pairs)]
    batches = [order[s:s + batch_size] for s in range(0, num_samples, batch_size)]
    batches += _pair_batches(constraints, pair_order, max(batch_size // 2, 1))
    return [batches[b] for b in rng.permutation(len(batches))]


def constrained_dataset(x: np.ndarray, constraints: ConstraintSet | None = None, batch_size: int = 256,
                        seed: int = 0, layout: str = "separate") -> tf.data.Dataset:
    """A dataset of ``(x_batch, W_batch)`` for ``DCGMM.fit``; each iteration is one epoch.

    ``W_batch`` is the B x B submatrix of the constraint matrix for the batch's samples (see
    :func:`epoch_batches` for ``layout``). Every new iteration (epoch) draws a new order from
    ``(seed, epoch number)``, so runs are reproducible.
    """
    x = np.asarray(x, np.float32)
    if constraints is None:
        constraints = ConstraintSet.empty(len(x))
    if constraints.num_samples != len(x):
        raise ValueError(f"the constraints index {constraints.num_samples} samples but x holds {len(x)}")
    if batch_size < 2:
        raise ValueError(f"batch_size must be at least 2, got {batch_size}")
    steps = len(epoch_batches(len(x), constraints, batch_size, np.random.default_rng(seed), layout))
    epoch = [0]

    def generate():
        rng = np.random.default_rng([seed, epoch[0]])
        epoch[0] += 1
        for idx in epoch_batches(len(x), constraints, batch_size, rng, layout):
            yield x[idx], constraints.submatrix(idx)

    signature = (tf.TensorSpec((None, *x.shape[1:]), tf.float32), tf.TensorSpec((None, None), tf.float32))
    dataset = tf.data.Dataset.from_generator(generate, output_signature=signature)
    return dataset.apply(tf.data.experimental.assert_cardinality(steps)).prefetch(tf.data.AUTOTUNE)
