"""tf.data pipelines yielding ``(x_batch, W_batch)`` for training DC-GMM."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import tensorflow as tf
from scipy import sparse
from scipy.sparse import csgraph

from dcgmm_tf import validation
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
    - ``"spread"``: the pairs are shared out evenly over all batches, each batch filled up to
      ``batch_size`` with data samples; every step then sees both kinds of terms.
    - ``"none"``: data batches only.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    order = rng.permutation(num_samples)
    num_pairs = len(constraints) if layout != "none" else 0
    pair_order = rng.permutation(num_pairs)
    if layout == "spread" and num_pairs:
        num_batches = -(-(num_samples + 2 * num_pairs) // batch_size)
        pair_chunks = np.array_split(pair_order, num_batches)
        if 2 * len(pair_chunks[0]) >= batch_size:
            raise ValueError(f"{num_pairs} pairs do not fit in {num_batches} batches of {batch_size}; "
                             "use layout='separate' or a larger batch size")
        data_ends = np.minimum(np.cumsum([batch_size - 2 * len(c) for c in pair_chunks]), num_samples)
        data = np.split(order, data_ends[:-1])
        return [np.concatenate([d, constraints.i[c], constraints.j[c]]) for d, c in zip(data, pair_chunks)]
    batches = [order[s:s + batch_size] for s in range(0, num_samples, batch_size)]
    batches += _pair_batches(constraints, pair_order, max(batch_size // 2, 1))
    return [batches[b] for b in rng.permutation(len(batches))]


def split_for_replicas(w: np.ndarray, num_replicas: int) -> list[np.ndarray]:
    """Positions of a batch shared out over ``num_replicas`` parts without cutting a constraint.

    ``w`` is the batch's B x B constraint submatrix. Samples linked (directly or through other samples of
    the batch) stay in one part; the linked groups are dealt largest first to the smallest part, so the
    parts are as equal as the groups allow. A part is empty only when the batch has fewer groups than
    parts. Positions within a part keep their batch order.
    """
    num_groups, group = csgraph.connected_components(sparse.csr_matrix(w != 0), directed=False)
    sizes = np.bincount(group, minlength=num_groups)
    load = np.zeros(num_replicas, np.int64)
    part_of_group = np.empty(num_groups, np.int64)
    for g in np.argsort(-sizes, kind="stable"):
        part_of_group[g] = np.argmin(load)
        load[part_of_group[g]] += sizes[g]
    part = part_of_group[group]
    return [np.flatnonzero(part == r) for r in range(num_replicas)]


def epoch_elements(x: np.ndarray, constraints: ConstraintSet, batch_size: int, rng: np.random.Generator,
                   layout: str = "separate", num_replicas: int = 1) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The ``(x_batch, W_batch)`` of one epoch's batches (:func:`epoch_batches`).

    With ``num_replicas`` R > 1 (for ``tf.distribute``, see :mod:`dcgmm_tf.distribute`) every batch comes as
    R consecutive parts, one per replica (:func:`split_for_replicas`): no constraint between two samples of
    the batch is cut, so the parts' W blocks hold all of the batch's constraints.
    """
    for idx in epoch_batches(len(x), constraints, batch_size, rng, layout):
        w = constraints.submatrix(idx)
        if num_replicas == 1:
            yield x[idx], w
            continue
        for part in split_for_replicas(w, num_replicas):
            yield x[idx[part]], w[np.ix_(part, part)]


PREFETCH_BATCHES = 2


def prefetch_without_autotune(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """``dataset`` prefetching :data:`PREFETCH_BATCHES` elements, with tf.data's autotuning switched off.

    Training pipelines are iterated once per epoch. With autotuning on, closing an iterator that ran for a few
    seconds of heavy compute stalls for ~5 s with the CPU idle (TensorFlow 2.21, measured on 2 cores): it hit
    a third of the epochs and made the average Fashion-MNIST epoch 1.5 times slower (docs/performance.md).
    Generating a batch takes ~1 ms, so a fixed prefetch keeps up without tuning.
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.prefetch(PREFETCH_BATCHES).with_options(options)


def submatrix_fn(constraints: ConstraintSet):
    """A tf function of batch indices ``idx`` (int64, may repeat) giving ``W[idx][:, idx]``, exactly what
    :meth:`ConstraintSet.submatrix` gives, with TensorFlow ops on the CSR arrays of W (no Python per batch)."""
    adjacency = constraints.adjacency
    indptr = tf.constant(adjacency.indptr.astype(np.int64))
    neighbours = tf.constant(adjacency.indices.astype(np.int64))
    weights = tf.constant(adjacency.data.astype(np.float32))

    def submatrix(idx: tf.Tensor) -> tf.Tensor:
        batch = tf.shape(idx, out_type=tf.int64)[0]
        starts = tf.gather(indptr, idx)
        counts = tf.gather(indptr, idx + 1) - starts
        entries = tf.ragged.range(starts, starts + counts).flat_values  # the batch rows' entries of W
        rows = tf.repeat(tf.range(batch), counts)
        cols, values = tf.gather(neighbours, entries), tf.gather(weights, entries)
        order = tf.argsort(idx, stable=True)  # each neighbour -> every batch position holding it
        sorted_idx = tf.gather(idx, order)
        first = tf.searchsorted(sorted_idx, cols, side="left", out_type=tf.int64)
        hits = tf.searchsorted(sorted_idx, cols, side="right", out_type=tf.int64) - first
        positions = tf.gather(order, tf.ragged.range(first, first + hits).flat_values)
        pairs = tf.stack([tf.repeat(rows, hits), tf.cast(positions, tf.int64)], axis=1)
        return tf.scatter_nd(pairs, tf.repeat(values, hits), tf.stack([batch, batch]))

    return submatrix


def constrained_dataset(x: np.ndarray, constraints: ConstraintSet | None = None, batch_size: int = 256,
                        seed: int = 0, layout: str = "separate", initial_epoch: int = 0) -> tf.data.Dataset:
    """A dataset of ``(x_batch, W_batch)`` for ``DCGMM.fit``; each iteration is one epoch.

    ``W_batch`` is the B x B submatrix of the constraint matrix for the batch's samples (see
    :func:`epoch_batches` for ``layout``). Every new iteration (epoch) draws a new order from
    ``(seed, epoch number)``, so runs are reproducible; epochs are numbered from ``initial_epoch`` (pass
    ``fit``'s ``initial_epoch`` when resuming a run). Python runs once per epoch (the epoch's index batches);
    each batch's samples and W block are gathered by TensorFlow ops in the input graph (``submatrix_fn``).
    """
    x = validation.check_data(x)
    if constraints is None:
        constraints = ConstraintSet.empty(len(x))
    if constraints.num_samples != len(x):
        raise ValueError(f"the constraints index {constraints.num_samples} samples but x holds {len(x)}")
    if batch_size < 2:
        raise ValueError(f"batch_size must be at least 2, got {batch_size}")
    steps = len(epoch_batches(len(x), constraints, batch_size, np.random.default_rng(seed), layout))
    epoch = [initial_epoch]

    def epoch_indices():
        rng = np.random.default_rng([seed, epoch[0]])
        epoch[0] += 1
        batches = epoch_batches(len(x), constraints, batch_size, rng, layout)
        yield np.concatenate(batches).astype(np.int64), np.array([len(b) for b in batches], np.int64)

    samples, submatrix = tf.constant(x), submatrix_fn(constraints)
    signature = (tf.TensorSpec((None,), tf.int64), tf.TensorSpec((None,), tf.int64))
    dataset = tf.data.Dataset.from_generator(epoch_indices, output_signature=signature).flat_map(
        lambda values, lengths: tf.data.Dataset.from_tensor_slices(tf.RaggedTensor.from_row_lengths(values, lengths)))
    dataset = dataset.map(lambda idx: (tf.gather(samples, idx), submatrix(idx)), num_parallel_calls=2,
                          deterministic=True)
    return prefetch_without_autotune(dataset.apply(tf.data.experimental.assert_cardinality(steps)))
