"""Training under tf.distribute: per-replica batches keep constraint pairs together, the loss is the global one."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dcgmm_tf import ConstraintSet
from dcgmm_tf.data import constrained_dataset
from dcgmm_tf.distribute import make_strategy
from tests.pipeline_reference import epoch_elements, split_for_replicas

REPO = Path(__file__).resolve().parents[1]


def unique_rows(n, dim=6, seed=0):
    """Data whose rows identify their sample (all different)."""
    return np.random.default_rng(seed).random((n, dim)).astype(np.float32)


def test_split_keeps_linked_samples_together_and_balances():
    w = np.zeros((10, 10), np.float32)
    for i, j in ((0, 5), (5, 7), (2, 3)):  # groups {0, 5, 7}, {2, 3} and five single samples
        w[i, j] = w[j, i] = 1.0
    parts = split_for_replicas(w, 3)
    assert sorted(np.concatenate(parts).tolist()) == list(range(10))
    owner = {p: r for r, part in enumerate(parts) for p in part}
    assert owner[0] == owner[5] == owner[7] and owner[2] == owner[3]
    assert sorted(len(p) for p in parts) == [3, 3, 4]
    assert all(np.all(np.diff(p) > 0) for p in parts)


def test_split_leaves_a_part_empty_only_without_enough_groups():
    w = np.zeros((2, 2), np.float32)
    w[0, 1] = w[1, 0] = -1.0
    assert [len(p) for p in split_for_replicas(w, 2)] == [2, 0]


@pytest.mark.parametrize("layout", ["separate", "spread"])
def test_replica_parts_rebuild_each_batch_and_keep_every_pair(layout):
    n, batch, replicas = 120, 24, 3
    x = unique_rows(n)
    row_index = {row.tobytes(): k for k, row in enumerate(x)}
    labels = np.random.default_rng(1).integers(0, 3, n)
    constraints = ConstraintSet.from_labels(labels, 40, alpha=5.0, seed=1)
    single = list(epoch_elements(x, constraints, batch, np.random.default_rng(3), layout))
    parts = list(epoch_elements(x, constraints, batch, np.random.default_rng(3), layout, num_replicas=replicas))
    assert len(parts) == replicas * len(single)
    pairs = set(zip(constraints.i.tolist(), constraints.j.tolist()))
    for step, (x_batch, w_batch) in enumerate(single):
        step_parts = parts[replicas * step : replicas * (step + 1)]
        indices = [[row_index[row.tobytes()] for row in xp] for xp, _ in step_parts]
        assert sorted(sum(indices, [])) == sorted(row_index[row.tobytes()] for row in x_batch)
        owner = {k: r for r, part in enumerate(indices) for k in part}
        for i, j in pairs:
            if i in owner and j in owner:
                assert owner[i] == owner[j], f"pair ({i}, {j}) split over replicas"
        for part, (_, w_part) in zip(indices, step_parts):
            np.testing.assert_array_equal(w_part, constraints.submatrix(part))
        # Nothing is lost: the blocks hold all of the batch's constraint weight.
        assert sum(float(np.abs(w).sum()) for _, w in step_parts) == pytest.approx(float(np.abs(w_batch).sum()))


def test_dealing_singletons_at_once_is_dealing_them_one_by_one():
    from dcgmm_tf.data.pipeline import deal_groups

    rng = np.random.default_rng(0)
    for _ in range(200):
        sizes = rng.choice([1, 1, 1, 2, 3, 5], size=rng.integers(1, 30))
        parts = int(rng.integers(1, 5))
        load, expected = np.zeros(parts, int), np.empty(len(sizes), int)
        for group in np.argsort(-sizes, kind="stable"):
            expected[group] = np.argmin(load)
            load[expected[group]] += sizes[group]
        np.testing.assert_array_equal(deal_groups(sizes, parts), expected)


@pytest.mark.parametrize("layout, closure", [("separate", False), ("spread", False), ("separate", True)])
def test_distributed_pipeline_gives_the_parts_of_the_batch_by_batch_reference(layout, closure):
    """The whole epoch's parts, made at once in the tf.data graph, equal those of epoch_elements bit for bit."""
    import tensorflow as tf

    from dcgmm_tf.data.pipeline import ROW_KEYS, batch_elements, epoch_arrays
    from dcgmm_tf.distribute import distributed_constrained_dataset

    rng = np.random.default_rng(2)
    x, labels = rng.random((300, 5), dtype=np.float32), rng.integers(0, 4, 300)
    constraints = ConstraintSet.from_labels(labels, 120, seed=1, transitive_closure=closure)
    for replicas in (2, 3):
        for epoch in (0, 1):
            expected = list(
                epoch_elements(x, constraints, 40, np.random.default_rng([7, epoch]), layout, num_replicas=replicas)
            )
            arrays = epoch_arrays(len(x), constraints, 40, 7, epoch, layout, num_replicas=replicas)
            got = list(batch_elements(tf.data.Dataset.from_tensor_slices(dict(zip(ROW_KEYS, arrays))), x))
            assert len(got) == len(expected)
            for (x_got, w_got), (x_expected, w_expected) in zip(got, expected):
                np.testing.assert_array_equal(x_got.numpy(), x_expected)
                np.testing.assert_array_equal(w_got.numpy(), w_expected)
    strategy = make_strategy("default")
    dataset, steps = distributed_constrained_dataset(strategy, x, constraints, batch_size=40, seed=7, layout=layout)
    first = list(epoch_elements(x, constraints, 40, np.random.default_rng([7, 0]), layout))
    for (x_got, w_got), (x_expected, w_expected) in zip(iter(dataset), first):
        np.testing.assert_array_equal(x_got.numpy(), x_expected)
        np.testing.assert_array_equal(w_got.numpy(), w_expected)
    assert steps == len(first)


def test_make_strategy_names():
    assert make_strategy("default").num_replicas_in_sync == 1
    with pytest.raises(ValueError, match="strategy"):
        make_strategy("tpu")


def mirrored_against_single_device() -> dict:
    """Run in a fresh process (logical devices must be set before TF starts); prints a JSON report."""
    import keras
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from dcgmm_tf.distribute import distributed_constrained_dataset
    from tests.helpers import noise_free_model, replica_problem

    batch = 32
    x, constraints = replica_problem()
    build = noise_free_model
    keras.utils.set_random_seed(0)
    single = build()
    initial = [v.numpy() for v in single.weights]
    single_data = constrained_dataset(x, constraints, batch_size=batch, seed=0)
    single_loss = single.fit(single_data, epochs=1, verbose=0).history["loss"][0]

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        mirrored = build()
    mirrored.set_weights(initial)
    data, steps = distributed_constrained_dataset(strategy, x, constraints, batch_size=batch, seed=0)
    first = mirrored.fit(data, epochs=1, steps_per_epoch=steps, verbose=0).history["loss"][0]
    gap = max(float(np.abs(a - b).max()) for a, b in zip(single.get_weights(), mirrored.get_weights()))
    change = max(float(np.abs(a - b).max()) for a, b in zip(single.get_weights(), initial))
    probabilities = mirrored.cluster_probabilities(x, batch_size=16)  # shared out among the replicas, once each
    probability_gap = float(np.abs(probabilities - single.cluster_probabilities(x, batch_size=16)).max())
    noise = strategy.run(tf.function(lambda: mirrored._standard_normal((4, 2))))
    noise = [v.numpy() for v in strategy.experimental_local_results(noise)]
    with strategy.scope():
        mirrored.compile(optimizer=keras.optimizers.Adam(1e-2))
    more = mirrored.fit(data, epochs=9, initial_epoch=1, steps_per_epoch=steps, verbose=0).history
    return {
        "replicas": strategy.num_replicas_in_sync,
        "steps": steps,
        "single_steps": int(single_data.cardinality()),
        "single_loss": single_loss,
        "mirrored_loss": first,
        "max_weight_gap": gap,
        "max_weight_change": change,
        "losses": more["loss"],
        "replica_noise_gap": float(np.abs(noise[0] - noise[1]).min()),
        "probabilities_shape": list(probabilities.shape),
        "samples_and_clusters": [len(x), mirrored.num_clusters],
        "probability_gap": probability_gap,
    }


@pytest.mark.slow
def test_mirrored_training_matches_single_device_and_trains():
    code = "import json, tests.test_distribute as t; print(json.dumps(t.mirrored_against_single_device()))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["replicas"] == 2 and report["steps"] == report["single_steps"] == 6
    # One epoch (6 SGD steps, one with an empty replica): same loss and same weights as on one device.
    assert np.isfinite(report["mirrored_loss"])
    assert report["mirrored_loss"] == pytest.approx(report["single_loss"], rel=1e-4)
    assert report["max_weight_change"] > 1e-2  # the steps moved the weights ...
    assert report["max_weight_gap"] < 1e-4  # ... identically on both
    assert report["replica_noise_gap"] > 0  # each replica draws its own reparameterisation noise
    assert report["probabilities_shape"] == report["samples_and_clusters"] and report["probability_gap"] < 1e-4
    losses = report["losses"]  # 8 more epochs with Adam
    assert all(np.isfinite(losses)) and losses[-1] < losses[0] - 1.0


def test_distributed_steps_per_execution_divides_the_epoch():
    from dcgmm_tf.fitting import distributed_steps_per_execution

    assert distributed_steps_per_execution(282, 32, False) == 6  # Fashion-MNIST's epoch: 2 * 3 * 47 steps
    assert distributed_steps_per_execution(26, 32, False) == 26
    assert distributed_steps_per_execution(64, 32, False) == 32
    assert distributed_steps_per_execution(47, 32, False) == 1
    assert distributed_steps_per_execution(64, 32, True) == 1


def test_fit_under_a_strategy_trains_each_epoch_exactly_its_steps():
    # A distributed dataset has no end: a call of 32 steps on an epoch of fewer would run into the next epoch.
    import tensorflow as tf

    from dcgmm_tf.data.pipeline import steps_per_epoch
    from dcgmm_tf.fitting import FitSchedule, fit_mixture
    from tests.helpers import noise_free_model, replica_problem

    x, constraints = replica_problem(n=600)
    schedule = FitSchedule(epochs=2, batch_size=32)
    steps = steps_per_epoch(len(x), constraints, schedule.batch_size, schedule.layout)
    assert steps % 32 and steps < 32  # one call of 32 steps would cross the epoch's end
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        model = noise_free_model()
    history = fit_mixture(model, x, constraints, schedule, strategy=strategy, steps_per_execution=32, verbose=0)
    assert len(history["loss"]) == 2
    assert int(model.optimizer.iterations.numpy()) == 2 * steps
