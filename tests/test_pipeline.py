"""Batching: every sample and pair once per epoch, pairs kept together, W_batch the right submatrix."""

import numpy as np
import pytest

from dcgmm_tf import ConstraintSet
from dcgmm_tf.data import constrained_dataset, epoch_batches
from dcgmm_tf.data.pipeline import steps_per_epoch
from tests.helpers import dense_matrix


@pytest.fixture
def setup():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 500)
    return labels, ConstraintSet.from_labels(labels, 150, alpha=5.0, seed=0)


def _pairs_in(batch):
    return {(min(a, b), max(a, b)) for a in batch for b in batch if a != b}


@pytest.mark.parametrize("layout", ["separate", "spread"])
def test_epoch_covers_every_sample_and_keeps_pairs_together(setup, layout):
    labels, constraints = setup
    batches = epoch_batches(len(labels), constraints, 32, np.random.default_rng(1), layout)
    assert all(len(b) <= 32 for b in batches)
    seen = np.concatenate(batches)
    assert set(seen) == set(range(len(labels)))
    together = set().union(*(_pairs_in(b) for b in batches))
    assert all((i, j) in together for i, j in zip(constraints.i, constraints.j))


def test_separate_layout_has_pair_batches_of_half_the_batch_size(setup):
    labels, constraints = setup
    batches = epoch_batches(len(labels), constraints, 32, np.random.default_rng(1), "separate")
    data_batches = -(-len(labels) // 32)
    pair_batches = -(-len(constraints) // 16)
    assert len(batches) == data_batches + pair_batches
    assert sum(len(b) for b in batches) == len(labels) + 2 * len(constraints)
    for b in batches:  # a pair batch is [i_1..i_p, j_1..j_p] of p stored pairs
        half = len(b) // 2
        if len(b) % 2 == 0 and np.all(constraints.submatrix(b)[np.arange(half), np.arange(half) + half] != 0):
            break
    else:
        pytest.fail("no batch made of constrained pairs")


def test_spread_layout_fills_every_batch(setup):
    labels, constraints = setup
    batches = epoch_batches(len(labels), constraints, 32, np.random.default_rng(1), "spread")
    assert all(len(b) == 32 for b in batches[:-1])
    assert all(constraints.submatrix(b).any() for b in batches[:-1])


@pytest.mark.parametrize(
    "num_samples, num_pairs, batch_size, layout",
    [
        (500, 300, 32, "separate"),
        (500, 300, 64, "spread"),
        (500, 0, 32, "spread"),
        (33, 0, 32, "separate"),
        (1000, 7, 3, "separate"),
        (100, 2, 2, "separate"),
        (640, 640, 256, "spread"),
    ],
)
def test_steps_per_epoch_counts_the_batches(num_samples, num_pairs, batch_size, layout):
    y = np.arange(num_samples) % 5
    constraints = ConstraintSet.from_labels(y, num_pairs, seed=0) if num_pairs else ConstraintSet.empty(num_samples)
    batches = epoch_batches(num_samples, constraints, batch_size, np.random.default_rng(0), layout)
    assert steps_per_epoch(num_samples, constraints, batch_size, layout) == len(batches)


def test_bad_layout(setup):
    labels, constraints = setup
    with pytest.raises(ValueError, match="layout"):
        epoch_batches(len(labels), constraints, 32, np.random.default_rng(1), "mixed")


def test_dataset_yields_x_and_the_dense_submatrix(setup):
    labels, constraints = setup
    x = np.arange(len(labels), dtype=np.float32)[:, None] * np.ones((1, 3), np.float32)
    dense = dense_matrix(constraints)
    dataset = constrained_dataset(x, constraints, batch_size=32, seed=3)
    steps = 0
    for xb, wb in dataset:
        idx = xb.numpy()[:, 0].astype(int)  # x encodes the sample index
        np.testing.assert_array_equal(wb.numpy(), dense[np.ix_(idx, idx)])
        steps += 1
    assert steps == int(dataset.cardinality())


def test_epochs_differ_but_are_reproducible(setup):
    labels, constraints = setup
    x = np.arange(len(labels), dtype=np.float32)[:, None]

    def first_batches(dataset):
        return [next(iter(dataset))[0].numpy().ravel() for _ in range(2)]

    a = first_batches(constrained_dataset(x, constraints, batch_size=32, seed=3))
    b = first_batches(constrained_dataset(x, constraints, batch_size=32, seed=3))
    assert not np.array_equal(a[0], a[1])  # a new order every epoch
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_dataset_rejects_mismatched_constraints(setup):
    _, constraints = setup
    with pytest.raises(ValueError, match="samples"):
        constrained_dataset(np.zeros((10, 3), np.float32), constraints)


def test_training_pipelines_run_without_tf_data_autotuning_or_rewrites(setup, monkeypatch):
    # Closing an autotuned iterator after seconds of training stalls ~5 s (docs/performance.md); every epoch
    # closes one, so the pipelines that fit iterates switch autotuning off. tf.data's rewrites would copy the data
    # that the batches are gathered from.
    import keras

    from dcgmm_tf import DCGMM, pretraining
    from dcgmm_tf.networks import MLPDecoder, MLPEncoder

    labels, constraints = setup
    x = np.random.default_rng(0).random((len(labels), 4), dtype=np.float32)

    def tuning(data):
        options = data.options()
        return options.autotune.enabled, options.experimental_optimization.apply_default_optimizations

    assert tuning(constrained_dataset(x, constraints, batch_size=32)) == (False, False)
    seen = []
    monkeypatch.setattr(keras.Model, "fit", lambda self, data, **kwargs: seen.append(tuning(data)))
    model = DCGMM(
        (4,),
        num_clusters=2,
        seed=0,
        encoder=MLPEncoder(2, (8,), name="encoder"),
        decoder=MLPDecoder(4, (8,), name="decoder"),
    )
    pretraining.pretrain_autoencoder(model, x, epochs=1)
    assert seen == [(False, False)]


@pytest.mark.parametrize(
    "layout, pairs, closure", [("separate", 300, False), ("spread", 150, True), ("separate", 0, False)]
)
def test_in_graph_pipeline_gives_the_batches_and_blocks_of_the_python_one(layout, pairs, closure):
    """The tf.data graph (Python once per epoch) yields, bit for bit, what epoch_elements computes in numpy."""
    from tests.pipeline_reference import epoch_elements

    rng = np.random.default_rng(0)
    x, y = rng.random((700, 6), dtype=np.float32), rng.integers(0, 5, 700)
    constraints = (
        ConstraintSet.from_labels(y, pairs, seed=1, transitive_closure=closure) if pairs else ConstraintSet.empty(700)
    )
    dataset = constrained_dataset(x, constraints, batch_size=64, seed=3, layout=layout, initial_epoch=2)
    for epoch in (2, 3):
        expected = list(epoch_elements(x, constraints, 64, np.random.default_rng([3, epoch]), layout))
        got = list(dataset)
        assert len(got) == len(expected) == int(dataset.cardinality())
        for (x_got, w_got), (x_expected, w_expected) in zip(got, expected):
            np.testing.assert_array_equal(x_got.numpy(), x_expected)
            np.testing.assert_array_equal(w_got.numpy(), w_expected)


def test_the_next_epoch_is_made_ahead_and_any_other_made_on_demand():
    """EpochsAhead returns make(epoch) whatever was made ahead: the next epoch comes from the background thread, an
    epoch out of turn (a resumed run) is made on the spot, and an error in the thread reaches the caller."""
    import threading

    from dcgmm_tf.data.pipeline import EpochsAhead

    made = []

    def make(epoch):
        made.append((epoch, threading.current_thread() is threading.main_thread()))
        if epoch == 9:
            raise ValueError("epoch 9")
        return (np.array([epoch]),)

    ahead = EpochsAhead(make)
    assert [int(ahead(e)[0][0]) for e in (0, 1, 2, 5, 6)] == [0, 1, 2, 5, 6]
    ahead(7)  # 8 is being made ahead
    in_main = dict(made)
    assert in_main[0] and in_main[5] and not in_main[1] and not in_main[2] and not in_main[6]
    ahead(8)  # 9 is made ahead and raises in the thread ...
    with pytest.raises(ValueError, match="epoch 9"):
        ahead(9)  # ... and here


def test_shuffled_batches_are_those_of_a_shuffled_copy_of_the_rows():
    import tensorflow as tf

    from dcgmm_tf.data.pipeline import shuffled_batches

    x = np.random.default_rng(0).normal(size=(203, 3)).astype(np.float32)
    tf.random.set_seed(5)  # the process's seed takes part in the shuffle's, as in a pretraining
    new = shuffled_batches(x, 16, seed=7)
    tf.random.set_seed(5)
    old = tf.data.Dataset.from_tensor_slices(x).shuffle(len(x), seed=7).batch(16)
    epochs = []
    for _ in range(2):  # the order changes from epoch to epoch, identically
        got, want = [b.numpy() for b in new], [b.numpy() for b in old]
        assert [len(b) for b in got] == [len(b) for b in want]
        np.testing.assert_array_equal(np.concatenate(got), np.concatenate(want))
        epochs.append(np.concatenate(got))
    assert not np.array_equal(epochs[0], epochs[1])
    np.testing.assert_array_equal(np.sort(epochs[0], axis=0), np.sort(x, axis=0))


def test_host_tensor_holds_the_values_and_shares_an_aligned_float32_array():
    import tensorflow as tf

    from dcgmm_tf.data.pipeline import host_tensor
    from dcgmm_tf.validation import TENSOR_ALIGNMENT, check_data

    x = np.random.default_rng(1).normal(size=(50, 7))
    buffer = np.empty(x.size * 4 + 2 * TENSOR_ALIGNMENT, np.uint8)
    start = -buffer.ctypes.data % TENSOR_ALIGNMENT
    aligned = buffer[start : start + x.size * 4].view(np.float32).reshape(x.shape)
    unaligned = buffer[start + 4 : start + 4 + x.size * 4].view(np.float32).reshape(x.shape)
    read_only = x.astype(np.float32)
    read_only.flags.writeable = False
    cases = {"float64": x, "strided": x.astype(np.float32)[::2], "read-only": read_only, "empty": x[:0]}
    for name, array in cases.items():
        tensor = host_tensor(array)
        assert tensor.dtype == tf.float32 and tensor.shape == array.shape, name
        np.testing.assert_array_equal(tf.gather(tensor, np.arange(len(array))).numpy(), array.astype(np.float32))
    unaligned[...] = x  # TensorFlow's kernels would abort on this buffer if it were shared: it is copied
    np.testing.assert_array_equal(tf.reduce_sum(host_tensor(unaligned), 0).numpy(), unaligned.sum(0))
    aligned[...] = x
    shared = host_tensor(aligned)
    aligned[0, 0] = 123.0  # no copy: the tensor sees the array
    assert tf.gather(shared, [0]).numpy()[0, 0] == 123.0
    checked = check_data(x)  # float64 data: checking converts it into a buffer TensorFlow can share
    assert checked.dtype == np.float32 and checked.ctypes.data % TENSOR_ALIGNMENT == 0
    np.testing.assert_array_equal(checked, x.astype(np.float32))
    checked[0, 0] = -7.0
    assert tf.gather(host_tensor(checked), [0]).numpy()[0, 0] == -7.0


def test_a_step_that_makes_its_batches_from_rows_trains_as_the_batches_do(setup):
    import keras

    from dcgmm_tf import DCGMM, MLPDecoder, MLPEncoder
    from dcgmm_tf.data.pipeline import epoch_row_dataset

    labels, constraints = setup
    x = np.random.default_rng(2).random((len(labels), 12), dtype=np.float32)

    def trained(rows: bool) -> list[np.ndarray]:
        keras.utils.set_random_seed(0)
        model = DCGMM(
            (12,), 3, encoder=MLPEncoder(2, hidden_units=(8,)), decoder=MLPDecoder(12, hidden_units=(8,)), seed=0
        )
        model.compile(optimizer=keras.optimizers.Adam(1e-2), steps_per_execution=4)
        if not rows:
            model.fit(constrained_dataset(x, constraints, batch_size=32, seed=3, initial_epoch=1), epochs=2, verbose=0)
        else:

            def rows_from(epoch):
                steps = steps_per_epoch(len(x), constraints, 32)
                return epoch_row_dataset(len(x), constraints, steps, 32, 3, "separate", epoch)

            with pytest.raises(ValueError, match="batch_source"):
                model.train_step(next(iter(rows_from(1))))  # a row, and no data to make its batch from
            with model.batch_source(x):
                model.fit(rows_from(1), epochs=2, verbose=0)
            assert model._batch_samples is None  # the data is let go after the fit
        return model.get_weights()

    for made_in_step, made_by_tf_data in zip(trained(rows=True), trained(rows=False), strict=True):
        np.testing.assert_array_equal(made_in_step, made_by_tf_data)  # the same batches, bit for bit


def test_rows_without_pairs_train_as_rows_with_empty_w_blocks():
    import keras

    from dcgmm_tf import DCGMM, MLPDecoder, MLPEncoder
    from dcgmm_tf.data.pipeline import SAMPLE_KEYS, batch_from_row, epoch_row_dataset, host_tensor

    x = np.random.default_rng(2).random((150, 12), dtype=np.float32)
    no_pairs = ConstraintSet.empty(len(x))
    steps = steps_per_epoch(len(x), no_pairs, 32)

    def trained(pairs: bool) -> tuple[list[np.ndarray], dict[str, list[float]]]:
        keras.utils.set_random_seed(0)
        model = DCGMM(
            (12,), 3, encoder=MLPEncoder(2, hidden_units=(8,)), decoder=MLPDecoder(12, hidden_units=(8,)), seed=0
        )
        model.compile(optimizer=keras.optimizers.Adam(1e-2), steps_per_execution=steps)
        rows = epoch_row_dataset(len(x), no_pairs, steps, 32, 3, "separate", 0, epochs=3, pairs=pairs)
        with model.batch_source(x):
            history = model.fit(rows, epochs=3, steps_per_epoch=steps, verbose=0).history
        return model.get_weights(), history

    row = next(iter(epoch_row_dataset(len(x), no_pairs, steps, 32, 3, "separate", 0, pairs=False)))
    assert set(row) == set(SAMPLE_KEYS) and batch_from_row(host_tensor(x), row)[1] is None
    (without, history), (with_zeros, zeros_history) = trained(pairs=False), trained(pairs=True)
    for a, b in zip(without, with_zeros, strict=True):
        np.testing.assert_array_equal(a, b)  # a W block of zeros adds exactly nothing to the gradients
    assert history == zeros_history
    with pytest.raises(ValueError, match="pairs=False"):
        epoch_row_dataset(
            len(x), ConstraintSet.from_labels(np.arange(150) % 3, 10, seed=0), steps, 32, 3, "separate", 0, pairs=False
        )
