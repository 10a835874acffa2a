"""Training health (finite losses, rollback on NaN), exact resume after a kill, determinism, skipping done runs."""

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import pytest

from dcgmm_tf import ConstraintSet
from dcgmm_tf.callbacks import NonFiniteLossGuard, TrainingBackup, trim_history
from dcgmm_tf.data import constrained_dataset
from tests.helpers import parsed_flags, small_model, toy_data, toy_npz, weights_equal

REPO = Path(__file__).resolve().parents[1]


class Recorder(keras.callbacks.Callback):
    """Keeps the weights at every epoch end and every batch's running loss."""

    def __init__(self):
        super().__init__()
        self.weights, self.batch_losses = [], []

    def on_train_batch_end(self, batch, logs=None):
        self.batch_losses.append(logs["loss"])

    def on_epoch_end(self, epoch, logs=None):
        self.weights.append(self.model.get_weights())


class Poison(keras.callbacks.Callback):
    """Sets the cluster means to NaN before batch ``batch`` (0-based; with several steps per compiled call, the
    first batch of a call) of epoch ``epoch``."""

    def __init__(self, epoch, batch=1):
        super().__init__()
        self.epoch, self.batch, self.current = epoch, batch, None

    def on_epoch_begin(self, epoch, logs=None):
        self.current = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if self.current == self.epoch and batch == self.batch:
            self.model.cluster_means.assign(np.full(self.model.cluster_means.shape, np.nan, np.float32))


# ------------------------------------------------------- non-finite loss ---


def test_guard_stops_and_rolls_back_to_last_good_state(tmp_path):
    x, y = toy_data(128)
    model = small_model()
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    data = constrained_dataset(x, ConstraintSet.from_labels(y, 50), batch_size=32)
    steps_per_epoch = int(data.cardinality())
    path = tmp_path / "good.weights.h5"
    for bad_epoch in (0, 2):  # the second fit works only if the first restored the optimizer state too
        start, start_step = model.get_weights(), int(model.optimizer.iterations)
        guard, recorder = NonFiniteLossGuard(path), Recorder()
        history = model.fit(data, epochs=5, callbacks=[Poison(bad_epoch), guard, recorder], verbose=0)
        assert len(history.history["loss"]) == bad_epoch + 1  # stopped within the bad epoch
        assert not np.isfinite(history.history["loss"][-1])
        expected = start if bad_epoch == 0 else recorder.weights[bad_epoch - 1]
        assert weights_equal(model.get_weights(), expected)
        assert int(model.optimizer.iterations) == start_step + bad_epoch * steps_per_epoch
        kept = "the start of training" if bad_epoch == 0 else f"the end of epoch {bad_epoch}"
        assert (
            f"in epoch {bad_epoch + 1}, batch 2; training stopped and the model was reset to its weights "
            f"at {kept}, saved to {path}"
        ) in guard.error
        reloaded = small_model(seed=1)
        reloaded.load_weights(path)
        assert weights_equal(reloaded.get_weights(), expected)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["good.weights.h5", "good.weights.h5.sha256"]  # no tmp
        with pytest.raises(FloatingPointError, match="Lower the learning rate"):
            guard.raise_if_stopped()


def test_guard_checks_once_per_call_with_several_steps_per_call():
    x, y = toy_data(256)
    model = small_model()
    model.compile(optimizer=keras.optimizers.Adam(1e-3), steps_per_execution=3)
    data = constrained_dataset(x, ConstraintSet.from_labels(y, 50), batch_size=32)
    guard, recorder = NonFiniteLossGuard(), Recorder()
    model.fit(data, epochs=4, callbacks=[Poison(1, batch=3), guard, recorder], verbose=0)
    assert "in epoch 2, batch 6;" in guard.error  # the call of batches 4-6 turned the loss NaN
    assert weights_equal(model.get_weights(), recorder.weights[0])
    assert len(recorder.batch_losses) == -(-int(data.cardinality()) // 3) + 2  # epoch 1's calls, then 2 of epoch 2


def test_loss_stays_finite_with_extreme_constraints():
    """One model trained through all cases in turn (one traced train step keeps the test fast)."""
    x, y = toy_data(256)
    cases = {
        "alpha=1": ConstraintSet.from_labels(y, 300, alpha=1.0),
        "alpha=1e6": ConstraintSet.from_labels(y, 300, alpha=1e6),
        "q=0.4": ConstraintSet.from_labels(y, 300, q=0.4),  # alpha = 1000 log(1.5)
        # a must-link chain through all samples: one cluster holds everything, the others are empty
        "empty cluster": ConstraintSet(np.arange(255), np.arange(1, 256), np.full(255, 1e4), 256),
    }
    model = small_model(num_clusters=3)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    for case, constraints in cases.items():
        data = constrained_dataset(x, constraints, batch_size=64)
        guard, recorder = NonFiniteLossGuard(), Recorder()
        model.fit(data, epochs=4, callbacks=[guard, recorder], verbose=0)
        assert guard.error is None, case
        assert len(recorder.batch_losses) == 4 * int(data.cardinality()), case
        assert np.all(np.isfinite(recorder.batch_losses)), case
        variances = keras.ops.convert_to_numpy(model.cluster_variances)
        assert np.all(np.isfinite(variances)) and variances.min() >= model.min_variance, case
        probabilities = model.predict(x, verbose=0)
        assert np.all(np.isfinite(probabilities)), case
    assert len(np.unique(probabilities.argmax(-1))) < 3


# ----------------------------------------------------------------- resume ---


class Interrupt(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 2:
            raise KeyboardInterrupt


def test_backup_resumes_exactly(tmp_path):
    x, y = toy_data(128)
    constraints = ConstraintSet.from_labels(y, 60)

    def data(initial_epoch):
        return constrained_dataset(x, constraints, batch_size=32, seed=3, initial_epoch=initial_epoch)

    reference = small_model()
    reference.compile(optimizer=keras.optimizers.Adam(1e-3))
    reference.fit(data(0), epochs=4, verbose=0)

    model = small_model()
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    backup = TrainingBackup(tmp_path / "backup")
    with pytest.raises(KeyboardInterrupt):
        model.fit(data(0), epochs=4, callbacks=[backup, Interrupt()], verbose=0)
    assert sorted(p.name for p in (tmp_path / "backup").iterdir()) == ["epoch-00002.npz", "epoch-00002.npz.sha256"]
    for variable in [*model.variables, *model.optimizer.variables]:  # as if in a new process
        variable.assign(np.zeros(variable.shape, variable.dtype))
    assert backup.restore(model) == 2
    model.fit(data(2), epochs=4, initial_epoch=2, callbacks=[backup], verbose=0)
    assert weights_equal(model.get_weights(), reference.get_weights())
    assert not (tmp_path / "backup").exists()  # deleted when fit ends


def test_backup_skips_unreadable_file_and_another_model(tmp_path):
    model = small_model()
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    backup = TrainingBackup(tmp_path)
    backup.set_model(model)
    backup.on_epoch_end(4)
    (tmp_path / "epoch-00009.npz").write_bytes(b"half a file")
    assert backup.restore(model) == 5
    backup.on_epoch_end(5)  # the new backup replaces all others, even a higher-numbered one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["epoch-00006.npz", "epoch-00006.npz.sha256"]
    other = small_model(hidden=(16,))
    other.compile(optimizer=keras.optimizers.Adam(1e-3))
    assert backup.restore(other) == 0  # another model's backup: skipped with a warning (tests/test_damaged_files.py)
    assert TrainingBackup(tmp_path / "none").restore(model) == 0


def test_backup_keeps_two_for_workers_and_resumes_from_the_agreed_epoch(tmp_path):
    import tensorflow as tf

    from dcgmm_tf.distribute import common_epoch

    model = small_model()
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    backup = TrainingBackup(tmp_path, keep=2)
    backup.set_model(model)
    saved = []
    for epoch in range(4):
        model.cluster_means.assign(np.full(model.cluster_means.shape, float(epoch), np.float32))
        backup.on_epoch_end(epoch)
        saved.append(model.get_weights())
    assert sorted(p.name for p in tmp_path.glob("*.npz")) == ["epoch-00003.npz", "epoch-00004.npz"]
    (tmp_path / "epoch-00009.npz").write_bytes(b"half a file")
    offered = []

    def agree(epochs):  # the other worker's newest backup is of epoch 3
        offered.append(epochs)
        return common_epoch(tf.distribute.get_strategy(), [3], 6) if 3 in epochs else 0

    restored = small_model(seed=1)
    restored.compile(optimizer=keras.optimizers.Adam(1e-3))
    assert backup.restore(restored, agree) == 3 and offered == [[4, 3]]  # the damaged epoch 9 is not offered
    assert weights_equal(restored.get_weights(), saved[2])
    fresh = small_model(seed=1)
    fresh.compile(optimizer=keras.optimizers.Adam(1e-3))
    assert backup.restore(fresh, lambda epochs: 0) == 0  # no epoch in common: from the beginning
    assert weights_equal(fresh.get_weights(), small_model(seed=1).get_weights())
    strategy = tf.distribute.get_strategy()
    assert [common_epoch(strategy, e, 6) for e in ([4, 3], [], [7], [0, 6])] == [4, 0, 0, 6]


def test_trim_history(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("epoch,loss\n0,1.5\n1,1.2\n2,1.1\n")
    trim_history(path, 2)
    assert path.read_text() == "epoch,loss\n0,1.5\n1,1.2\n"
    trim_history(tmp_path / "missing.csv", 2)
    assert not (tmp_path / "missing.csv").exists()


# -------------------------------------------------------- command line ---


def cli_command(tmp_path, name):
    return [
        sys.executable,
        "-m",
        "experiments.run",
        f"--dataset={tmp_path / 'toy.npz'}",
        "--epochs=6",
        "--pretrain_epochs=1",
        "--pair_tuning_epochs=0",
        "--num_constraints=300",
        "--latent_dim=2",
        "--batch_size=64",
        "--eval_every=5",
        "--verbose=0",
        "--seed=3",
        f"--output_dir={tmp_path / name}",
        f"--cache_dir={tmp_path / name / 'cache'}",
    ]


def history(out):
    return pd.read_csv(out / "runs" / "dcgmm-toy-seed3" / "history.csv").drop(columns="elapsed_seconds")


# Session scope: the two tests below share one worker (their xdist group), but pytest-xdist may run another
# module's test between them, and a module fixture would then be made twice (37 s each on the 2-core machine).
@pytest.fixture(name="cli_runs", scope="session")
def fixture_cli_runs(tmp_path_factory):
    """A run of the command line killed after 2 epochs and restarted, and the uninterrupted run with the same seed
    made through the runner's flags in this process while the restarted one runs; the epochs the killed process
    wrote before it died are kept."""
    from experiments import run

    tmp_path = tmp_path_factory.mktemp("cli")
    toy_npz(tmp_path, 200)
    killed = subprocess.Popen(cli_command(tmp_path, "killed"), cwd=REPO, stderr=subprocess.PIPE, text=True)
    log = tmp_path / "killed" / "runs" / "dcgmm-toy-seed3" / "history.csv"
    while killed.poll() is None and not (log.exists() and log.read_text().count("\n") >= 3):  # 2 whole epochs
        time.sleep(0.02)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    text = log.read_text()
    before_kill = pd.read_csv(io.StringIO(text[: text.rfind("\n") + 1])).drop(columns="elapsed_seconds")
    backups = list((tmp_path / "killed" / "runs" / "dcgmm-toy-seed3").glob("backup-*/epoch-*.npz"))
    restarted = subprocess.Popen(cli_command(tmp_path, "killed"), cwd=REPO, stderr=subprocess.PIPE, text=True)
    with parsed_flags(["run", *cli_command(tmp_path, "a")[3:]]):
        run.main(["run"])
    _, err = restarted.communicate(timeout=600)
    assert restarted.returncode == 0, err[-3000:]
    return tmp_path, before_kill, backups


@pytest.mark.slow
@pytest.mark.xdist_group("cli_runs")  # one worker runs the fixture (scripts/test.sh: --dist loadgroup)
def test_same_seed_gives_the_same_epochs_in_another_process(cli_runs):
    tmp_path, before_kill, _ = cli_runs
    assert len(before_kill) >= 2  # whole lines only: the process may have died while writing the next one
    pd.testing.assert_frame_equal(before_kill, history(tmp_path / "a").iloc[: len(before_kill)])


@pytest.mark.slow
@pytest.mark.xdist_group("cli_runs")
def test_killed_run_resumes_where_it_stopped(cli_runs):
    tmp_path, before_kill, backups = cli_runs
    assert 2 <= len(before_kill) < 6 and backups  # it was killed mid-training, with a backup on disk
    out = tmp_path / "killed"
    rows = pd.read_csv(out / "results.csv")
    assert len(rows) == 1
    reference = pd.read_csv(tmp_path / "a" / "results.csv")
    pd.testing.assert_frame_equal(rows.drop(columns="train_seconds"), reference.drop(columns="train_seconds"))
    resumed = history(out)
    assert resumed["epoch"].tolist() == list(range(6))  # one line per epoch, none lost or repeated
    pd.testing.assert_frame_equal(resumed, history(tmp_path / "a"))
    assert not list((out / "runs" / "dcgmm-toy-seed3").glob("backup-*"))
