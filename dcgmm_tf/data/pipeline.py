"""tf.data pipelines yielding ``(x_batch, W_batch)`` for training DC-GMM."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import tensorflow as tf
from scipy import sparse
from scipy.sparse import csgraph

from dcgmm_tf import validation
from dcgmm_tf.constraints import ConstraintSet

LAYOUTS = ("separate", "spread")


def _pair_batches(constraints: ConstraintSet, order: np.ndarray, pairs_per_batch: int) -> list[np.ndarray]:
    """Sample indices of consecutive chunks of pairs (in ``order``), both ends of each pair in one chunk."""
    return [
        np.concatenate([constraints.i[chosen], constraints.j[chosen]])
        for chosen in (order[s : s + pairs_per_batch] for s in range(0, len(order), pairs_per_batch))
    ]


def steps_per_epoch(num_samples: int, constraints: ConstraintSet, batch_size: int, layout: str = "separate") -> int:
    """The number of batches of every epoch of :func:`epoch_batches`, counted without making them.

    Raises:
      ValueError: On an unknown layout, or pairs that do not fit in the batches of ``"spread"``.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    num_pairs = len(constraints)
    if layout == "spread" and num_pairs:
        num_batches = -(-(num_samples + 2 * num_pairs) // batch_size)
        if 2 * -(-num_pairs // num_batches) >= batch_size:  # the largest chunk of np.array_split
            raise ValueError(
                f"{num_pairs} pairs do not fit in {num_batches} batches of {batch_size}; "
                "use layout='separate' or a larger batch size"
            )
        return num_batches
    return -(-num_samples // batch_size) + -(-num_pairs // max(batch_size // 2, 1))


def epoch_batches(
    num_samples: int, constraints: ConstraintSet, batch_size: int, rng: np.random.Generator, layout: str = "separate"
) -> list[np.ndarray]:
    """Index batches of one epoch, in random order.

    Every sample appears once in the shuffled data batches, and every constrained pair once with both of
    its ends in the same batch (a random batch rarely holds both ends of a pair, so the pairwise term
    would almost never fire otherwise). ``layout`` says where the pairs go:

    - ``"separate"`` (the paper's): extra batches of ``batch_size // 2`` pairs.
    - ``"spread"``: the pairs are shared out evenly over all batches, each batch filled up to
      ``batch_size`` with data samples; every step then sees both kinds of terms.
    """
    num_batches = steps_per_epoch(num_samples, constraints, batch_size, layout)
    order = rng.permutation(num_samples)
    num_pairs = len(constraints)
    pair_order = rng.permutation(num_pairs)
    if layout == "spread" and num_pairs:
        pair_chunks = np.array_split(pair_order, num_batches)
        data_ends = np.minimum(np.cumsum([batch_size - 2 * len(c) for c in pair_chunks]), num_samples)
        data = np.split(order, data_ends[:-1])
        return [np.concatenate([d, constraints.i[c], constraints.j[c]]) for d, c in zip(data, pair_chunks)]
    batches = [order[s : s + batch_size] for s in range(0, num_samples, batch_size)]
    batches += _pair_batches(constraints, pair_order, max(batch_size // 2, 1))
    return [batches[b] for b in rng.permutation(len(batches))]


def deal_groups(sizes: np.ndarray, num_parts: int) -> np.ndarray:
    """The part of each group when groups of ``sizes`` are dealt largest first (ties: in their order) to the part
    with the smallest load so far (ties: the lowest part). Singletons are dealt in one vectorised step: the k-th
    goes to the k-th free slot in the order (load, part), which is what dealing them one by one gives."""
    sizes = np.asarray(sizes, np.int64)
    order = np.argsort(-sizes, kind="stable")
    load = np.zeros(num_parts, np.int64)
    part = np.empty(len(sizes), np.int64)
    for group in order[sizes[order] > 1]:
        part[group] = np.argmin(load)
        load[part[group]] += sizes[group]
    singles = order[sizes[order] <= 1]
    if len(singles):
        levels = (load[:, None] + np.arange(len(singles))[None, :]).ravel()
        owners = np.repeat(np.arange(num_parts), len(singles))
        part[singles] = owners[np.lexsort((owners, levels))[: len(singles)]]
    return part


def replica_parts(
    indices: np.ndarray, lengths: np.ndarray, constraints: ConstraintSet, num_replicas: int
) -> tuple[np.ndarray, np.ndarray]:
    """The batches (``indices`` cut by ``lengths``) each cut into ``num_replicas`` consecutive parts, for a whole
    epoch at once; returns the parts' indices and lengths.

    Samples linked (directly or through other samples of the batch) stay in one part; the linked groups are dealt
    largest first to the smallest part (:func:`deal_groups`), so the parts are as equal as the groups allow. A
    part is empty only when the batch has fewer groups than parts. Positions within a part keep their batch order.
    """
    rows, cols, _ = constraints.block_entries(indices, lengths)
    links = sparse.coo_matrix((np.ones(len(rows), bool), (rows, cols)), shape=(len(indices),) * 2)
    _, group = csgraph.connected_components(links.tocsr(), directed=False)  # groups never span two batches
    positions, part_lengths, start = [], [], 0
    for length in lengths:
        labels, local = np.unique(group[start : start + length], return_inverse=True)  # by first position
        part = deal_groups(np.bincount(local, minlength=len(labels)), num_replicas)[local]
        for r in range(num_replicas):
            mine = start + np.flatnonzero(part == r)
            positions.append(mine)
            part_lengths.append(len(mine))
        start += length
    return indices[np.concatenate(positions)], np.asarray(part_lengths, np.int64)


PREFETCH_BATCHES = 2


def prefetch_without_autotune(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """``dataset`` prefetching :data:`PREFETCH_BATCHES` elements, with tf.data's autotuning switched off.

    Training pipelines are iterated once per epoch. With autotuning on, closing an iterator that ran for a few
    seconds of heavy compute stalls for ~5 s with the CPU idle (TensorFlow 2.21, measured on 2 cores): it hit
    a third of the epochs and made the average Fashion-MNIST epoch 1.5 times slower (docs/performance.md).
    Generating a batch takes ~1 ms, so a fixed prefetch keeps up without tuning.

    tf.data's default graph rewrites are off too: to rewrite, tf.data serialises the dataset's graph, which copies
    a captured tensor such as the data that the batches are gathered from (measured: +1.1x the data, resident).
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    options.experimental_optimization.apply_default_optimizations = False
    return dataset.prefetch(PREFETCH_BATCHES).with_options(options)


EPOCH_SIGNATURE = (
    tf.TensorSpec((None, None), tf.int64),
    tf.TensorSpec((None,), tf.int64),
    tf.TensorSpec((None, None, 2), tf.int64),
    tf.TensorSpec((None, None), tf.float32),
    tf.TensorSpec((None,), tf.int64),
)


def padded_rows(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Rows of ``values`` cut by ``lengths``, as one array [rows, max length, ...] padded with zeros."""
    out = np.zeros((len(lengths), max(int(lengths.max(initial=0)), 1), *values.shape[1:]), values.dtype)
    row = np.repeat(np.arange(len(lengths)), lengths)
    out[row, np.arange(len(values)) - np.repeat(np.cumsum(lengths) - lengths, lengths)] = values
    return out


def epoch_arrays(
    num_samples: int,
    constraints: ConstraintSet,
    batch_size: int,
    seed: int,
    epoch: int,
    layout: str = "separate",
    num_replicas: int = 1,
) -> tuple[np.ndarray, ...]:
    """One epoch of the training pipeline as five arrays, one row per batch, computed at once (Python once per
    epoch).

    The batches of :func:`epoch_batches` with the generator seeded by ``(seed, epoch)`` (cut into replica parts by
    :func:`replica_parts` when ``num_replicas`` > 1): their ``indices`` [batches, B] (zero-padded) and ``lengths``;
    the non-zero entries of every batch's W block (:meth:`ConstraintSet.block_entries`): ``positions``
    [batches, E, 2] (row and column within the batch), ``weights`` [batches, E] (zero-padded) and their ``counts``.
    Matches :data:`EPOCH_SIGNATURE`.
    """
    rng = np.random.default_rng([seed, int(epoch)])
    batches = epoch_batches(num_samples, constraints, batch_size, rng, layout)
    indices, lengths = np.concatenate(batches).astype(np.int64), np.array([len(b) for b in batches], np.int64)
    if num_replicas > 1:
        indices, lengths = replica_parts(indices, lengths, constraints, num_replicas)
    rows, cols, weights = constraints.block_entries(indices, lengths)
    starts = np.cumsum(lengths) - lengths
    batch = np.repeat(np.arange(len(lengths)), lengths)[rows]
    positions = np.stack([rows - starts[batch], cols - starts[batch]], axis=1)
    counts = np.bincount(batch, minlength=len(lengths)).astype(np.int64)
    return (
        padded_rows(indices, lengths),
        lengths,
        padded_rows(positions, counts),
        padded_rows(weights.astype(np.float32), counts),
        counts,
    )


class EpochsAhead:
    """``make(epoch)``, with the next epoch's made in a background thread while this one trains.

    Keras opens a new iterator every epoch, and the first batch of an epoch waits for its arrays; made ahead, they
    are ready when the epoch starts. ``make`` must be a pure function of the epoch (as :func:`epoch_arrays` is), so
    the results do not depend on the thread.
    """

    def __init__(self, make: Callable[[int], tuple[np.ndarray, ...]]):
        self._make = make
        self._ahead: tuple[int, Future] | None = None
        self._threads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dcgmm-next-epoch")

    def __call__(self, epoch: int) -> tuple[np.ndarray, ...]:
        ahead, self._ahead = self._ahead, None
        made = ahead[1].result() if ahead is not None and ahead[0] == epoch else self._make(epoch)
        self._ahead = (epoch + 1, self._threads.submit(self._make, epoch + 1))
        return made


def host_tensor(x: np.ndarray) -> tf.Tensor:
    """``x`` as a float32 tensor in host memory, one copy of the data at most.

    ``tf.constant(x)`` keeps two copies of a large array resident (measured: +2.04x the array's size, TensorFlow
    2.21). This tensor shares its memory through DLPack with ``x`` itself, where ``x`` is a writeable,
    C-contiguous, aligned float32 array (as :func:`dcgmm_tf.validation.check_data` returns for data of any other
    dtype), and otherwise with an aligned float32 copy of it, made here. Tensors from it must not outlive changes
    to ``x``: the pipelines read it while a fit runs.
    """
    x = np.asarray(x)
    shareable = (
        x.dtype == np.float32
        and x.flags.c_contiguous
        and x.flags.writeable
        and x.ctypes.data % validation.TENSOR_ALIGNMENT == 0
    )
    return tf.experimental.dlpack.from_dlpack((x if shareable else validation.aligned_float32(x)).__dlpack__())


def shuffled_batches(x: np.ndarray, batch_size: int, seed: int) -> tf.data.Dataset:
    """Batches of the rows of ``x`` in an order shuffled anew each epoch: those of
    ``from_tensor_slices(x).shuffle(len(x), seed=seed).batch(batch_size)`` (tested), but the shuffle buffer holds
    row indices, and the rows are gathered from one tensor (:func:`host_tensor`), not from a buffer with a second
    copy of ``x``."""
    samples = host_tensor(x)
    order = tf.data.Dataset.range(len(x)).shuffle(len(x), seed=seed).batch(batch_size)
    return order.map(lambda indices: tf.gather(samples, indices))


ROW_KEYS = ("indices", "length", "positions", "weights", "count")


SAMPLE_KEYS = ROW_KEYS[:2]
"""The keys of a row without pairs (see :func:`epoch_row_dataset`'s ``pairs``): the batch's samples alone."""


def batch_from_row(samples: tf.Tensor, row: dict[str, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor | None]:
    """``(x_batch, W_batch)`` of one batch given as a row of :func:`epoch_arrays` (a dict over :data:`ROW_KEYS`):
    its samples gathered from ``samples`` and its W block scattered from its entries; ``W_batch`` is None for a
    row of :data:`SAMPLE_KEYS` alone."""
    length = row["length"]
    x_batch = tf.gather(samples, row["indices"][:length])
    if "count" not in row:
        return x_batch, None
    count = row["count"]
    return x_batch, tf.scatter_nd(row["positions"][:count], row["weights"][:count], tf.stack([length, length]))


def batch_elements(dataset: tf.data.Dataset, x: np.ndarray) -> tf.data.Dataset:
    """``(x_batch, W_batch)`` of each batch of ``dataset`` (the rows of :func:`epoch_arrays`, dicts over
    :data:`ROW_KEYS`), made by :func:`batch_from_row` from ``x`` (one :func:`host_tensor`) in the input graph."""
    samples = host_tensor(x)
    return dataset.map(lambda row: batch_from_row(samples, row), num_parallel_calls=2, deterministic=True)


def checked_inputs(
    x: np.ndarray, constraints: ConstraintSet | None, batch_size: int, layout: str
) -> tuple[np.ndarray, ConstraintSet, int]:
    """``x`` checked, its constraints (empty when None) checked against it, and the batches per epoch of
    ``layout`` (the same for every epoch, whatever its order); raises ``ValueError`` on bad input."""
    x = validation.check_data(x)
    if constraints is None:
        constraints = ConstraintSet.empty(len(x))
    if constraints.num_samples != len(x):
        raise ValueError(f"the constraints index {constraints.num_samples} samples but x holds {len(x)}")
    if batch_size < 2:
        raise ValueError(f"batch_size must be at least 2, got {batch_size}")
    return x, constraints, steps_per_epoch(len(x), constraints, batch_size, layout)


def epoch_rows(
    make: Callable[[int], tuple[np.ndarray, ...]], epochs: tf.data.Dataset, keys: Sequence[str] = ROW_KEYS
) -> tf.data.Dataset:
    """The batches (rows of :func:`epoch_arrays`, dicts over ``keys`` of :data:`ROW_KEYS`) of every epoch number in
    ``epochs``, one element each; ``make(epoch)`` makes an epoch's arrays in Python, once per epoch.

    ``make`` runs in a ``tf.numpy_function``, not in ``Dataset.from_generator``: this pipeline reads 1.3-1.4 times
    faster epoch by epoch without the generator's dataset op, which also lowers glibc's trim threshold to 128 kB
    for the whole process (TensorFlow 2.21 logs "Memory patch applied"; docs/performance.md).
    """

    def rows(epoch: tf.Tensor) -> tf.data.Dataset:
        arrays = tf.numpy_function(
            lambda e: make(int(e)), [epoch], [spec.dtype for spec in EPOCH_SIGNATURE], stateful=True
        )
        for array, spec in zip(arrays, EPOCH_SIGNATURE):
            array.set_shape(spec.shape)
        return tf.data.Dataset.from_tensor_slices({key: a for key, a in zip(ROW_KEYS, arrays) if key in keys})

    return epochs.flat_map(rows)


def constrained_dataset(
    x: np.ndarray,
    constraints: ConstraintSet | None = None,
    batch_size: int = 256,
    seed: int = 0,
    layout: str = "separate",
    initial_epoch: int = 0,
) -> tf.data.Dataset:
    """A dataset of ``(x_batch, W_batch)`` for ``DCGMM.fit``; each iteration is one epoch.

    ``W_batch`` is the B x B submatrix of the constraint matrix for the batch's samples (see
    :func:`epoch_batches` for ``layout``). Every new iteration (epoch) draws a new order from
    ``(seed, epoch number)``, so runs are reproducible; epochs are numbered from ``initial_epoch`` (pass
    ``fit``'s ``initial_epoch`` when resuming a run). Python runs once per epoch (:func:`epoch_arrays`);
    each batch's samples and W block are made by TensorFlow ops in the input graph (:func:`batch_elements`).
    """
    x, constraints, steps = checked_inputs(x, constraints, batch_size, layout)
    return epoch_dataset(x, constraints, steps, batch_size, seed, layout, initial_epoch)


def epoch_dataset(
    x: np.ndarray,
    constraints: ConstraintSet,
    steps: int,
    batch_size: int,
    seed: int,
    layout: str,
    initial_epoch: int,
) -> tf.data.Dataset:
    """:func:`constrained_dataset` for inputs that :func:`checked_inputs` returned already (``steps`` batches)."""
    rows = epoch_row_dataset(len(x), constraints, steps, batch_size, seed, layout, initial_epoch, prefetch=False)
    return prefetch_without_autotune(batch_elements(rows, x))


def epoch_row_dataset(
    num_samples: int,
    constraints: ConstraintSet,
    steps: int,
    batch_size: int,
    seed: int,
    layout: str,
    initial_epoch: int,
    prefetch: bool = True,
    epochs: int | None = None,
    pairs: bool = True,
) -> tf.data.Dataset:
    """The batches of :func:`constrained_dataset` as rows of :func:`epoch_arrays` (dicts over :data:`ROW_KEYS`),
    ``steps`` per epoch, for a training step that makes each batch itself (:func:`batch_from_row`, as
    ``DCGMM.train_step`` does given :meth:`DCGMM.batch_source`); prefetched unless ``prefetch`` is False. Without
    ``pairs`` (for ``constraints`` that hold none) the rows hold :data:`SAMPLE_KEYS` alone and the steps take no W
    block: a block of zeros adds exactly nothing to the loss or its gradients, but its scatter and the pair term
    cost a small network's step about a sixth of its time.

    Nothing runs per batch but slicing the epoch's arrays: the gather of the batch's samples (0.8 MB for a batch of
    256 x 784) is the part of the input pipeline that tf.data ran slowest (docs/performance.md), and inside the
    step it is an op of the compiled training loop.

    Without ``epochs`` an iterator yields one epoch and every new iterator the next (``fit`` opens one per epoch).
    With ``epochs`` one iterator yields every epoch from ``initial_epoch`` up to ``epochs``, for ``fit`` with
    ``steps_per_epoch=steps``: a short epoch then pays no iterator of its own (about 10 ms with its prefetch).
    """
    if not pairs and len(constraints):
        raise ValueError(f"pairs=False drops the W blocks of {len(constraints)} constraints")
    arrays = EpochsAhead(lambda e: epoch_arrays(num_samples, constraints, batch_size, seed, e, layout))
    keys = ROW_KEYS if pairs else SAMPLE_KEYS
    if epochs is not None:
        rows = epoch_rows(arrays, tf.data.Dataset.range(initial_epoch, epochs), keys)
        rows = rows.apply(tf.data.experimental.assert_cardinality(steps * (epochs - initial_epoch)))
    else:
        epoch = [initial_epoch]

        def next_epoch(_: int) -> tuple[np.ndarray, ...]:  # every new iterator is the next epoch
            epoch[0] += 1
            return arrays(epoch[0] - 1)

        rows = epoch_rows(next_epoch, tf.data.Dataset.range(1), keys)
        rows = rows.apply(tf.data.experimental.assert_cardinality(steps))
    return prefetch_without_autotune(rows) if prefetch else rows
