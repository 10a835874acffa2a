"""A disk that fills up while results, answers, backups or models are written: a clear error, and the files written
before stay as they were.

The full disk is injected: the ``os`` module that ``dcgmm_tf.storage`` (files written whole) or
``experiments.results`` (rows appended) calls is replaced by one whose ``write`` stops with ENOSPC once the disk is
full, and whose ``fsync`` then fails too (as on file systems that find out only when the data goes to disk).
"""

import errno
import os

import keras
import numpy as np
import pytest
from starlette.testclient import TestClient

from dcgmm_tf import ConstraintSet, storage
from dcgmm_tf.active_loop import ActiveSchedule
from dcgmm_tf.callbacks import TrainingBackup
from dcgmm_tf.data import constrained_dataset, load_dataset
from dcgmm_tf.labelling import LabellingSession
from dcgmm_tf.labelling.app import create_app
from dcgmm_tf.storage import DiskFullError, damage, write_atomically
from dcgmm_tf.validation import exit_on_user_error
from experiments import results
from tests.helpers import small_model, toy_data, toy_loop_configs, weights_equal


class FullDisk:
    """The ``os`` module, but for a disk with ``room`` bytes left (None: room enough) and ``syncs`` more successful
    ``fsync`` calls (None: all succeed): ``write`` writes what fits, then fails with ENOSPC."""

    def __init__(self, room=None, syncs=None):
        self.room, self.syncs = room, syncs

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def _full():
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def write(self, fd, data):
        if self.room is None:
            return os.write(fd, data)
        if self.room == 0:
            raise self._full()
        done = os.write(fd, bytes(data[: self.room]))
        self.room -= done
        return done

    def fsync(self, fd):
        if self.syncs is not None:
            if self.syncs == 0:
                raise self._full()
            self.syncs -= 1
        os.fsync(fd)


def snapshot(folder):
    """The bytes of every file under ``folder``, by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_results_row_on_a_full_disk_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "results.csv"
    for seed in (0, 1):
        results.append_row(path, {"dataset": "toy", "method": "dcgmm", "seed": seed, "acc": 0.5})
    before = path.read_bytes()
    for room in (0, 10):  # nothing fits, or a part of the row
        monkeypatch.setattr(results, "os", FullDisk(room=room))
        with pytest.raises(DiskFullError) as raised:
            results.append_row(path, {"dataset": "toy", "method": "dcgmm", "seed": 2, "acc": 0.8125})
        assert path.read_bytes() == before  # the cut row is gone, the rows before are whole
        message = str(raised.value)
        assert f"no space left on the device to write {path}" in message and "'acc': 0.8125" in message
    monkeypatch.setattr(results, "os", FullDisk(syncs=0))  # the data fits, the sync finds the disk full
    with pytest.raises(DiskFullError):
        results.append_row(path, {"dataset": "toy", "method": "dcgmm", "seed": 2, "acc": 0.8125})
    assert path.read_bytes() == before
    monkeypatch.setattr(results, "os", os)  # space again
    results.append_row(path, {"dataset": "toy", "method": "dcgmm", "seed": 2, "acc": 0.8125})
    assert [row[2] for row in results.valid_rows(path)[1]] == ["0", "1", "2"]


def test_a_runner_reports_a_full_disk_in_one_line():
    def main(argv):
        raise DiskFullError(errno.ENOSPC, "no space left on the device to write out/results.csv (...)")

    with pytest.raises(SystemExit) as raised:
        exit_on_user_error(main)(["run"])
    assert str(raised.value) == "error: no space left on the device to write out/results.csv (...)"


@pytest.mark.parametrize("failing_sync", [0, 1, 2])  # answers.csv, skipped.csv or votes.csv finds the disk full
def test_an_answer_on_a_full_disk_is_refused_and_the_answers_stay(tmp_path, monkeypatch, failing_sync):
    config, runtime = toy_loop_configs(tmp_path)
    schedule = ActiveSchedule(start_pairs=20, budgets=(40,), start_epochs=1, round_epochs=1)
    folder = tmp_path / "label"
    session = LabellingSession(config, load_dataset(config.dataset), folder, schedule, "random", runtime)
    client = TestClient(create_app(session))
    for answer in ("same", "skip", "different"):
        i, j = client.get("/api/state").json()["pair"]
        assert client.post("/api/answer", json={"i": i, "j": j, "answer": answer}).status_code == 200
    before, state = snapshot(folder), client.get("/api/state").json()
    monkeypatch.setattr(storage, "os", FullDisk(syncs=failing_sync))
    i, j = state["pair"]
    refused = client.post("/api/answer", json={"i": i, "j": j, "answer": "skip"})
    assert refused.status_code == 507
    assert refused.json()["error"].startswith("the answer was not recorded: no space left on the device to write")
    monkeypatch.setattr(storage, "os", FullDisk(syncs=failing_sync))
    assert client.post("/api/undo").status_code == 507
    assert snapshot(folder) == before  # no file changed, no temporary file left
    assert client.get("/api/state").json() == state  # nor the session
    monkeypatch.setattr(storage, "os", os)
    assert client.post("/api/answer", json={"i": i, "j": j, "answer": "skip"}).json()["skipped"] == 2


def test_a_backup_on_a_full_disk_stops_training_and_keeps_the_last_good_backup(tmp_path, monkeypatch):
    x, y = toy_data(128)
    model = small_model()
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    backup = TrainingBackup(tmp_path / "backup")
    saved = {}

    class DiskFillsUp(keras.callbacks.Callback):  # after the backup of epoch 2, before that of epoch 3
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                saved["weights"] = self.model.get_weights()
                saved["files"] = snapshot(tmp_path / "backup")
                monkeypatch.setattr(storage, "os", FullDisk(syncs=0))

    data = constrained_dataset(x, ConstraintSet.from_labels(y, 60), batch_size=32)
    with pytest.raises(DiskFullError, match="no space left on the device to write .*epoch-00003.npz"):
        model.fit(data, epochs=3, callbacks=[backup, DiskFillsUp()], verbose=0)
    monkeypatch.setattr(storage, "os", os)
    assert snapshot(tmp_path / "backup") == saved["files"] and list(saved["files"]) == [
        "epoch-00002.npz",
        "epoch-00002.npz.sha256",
    ]
    assert damage(tmp_path / "backup" / "epoch-00002.npz") is None
    restored = small_model(seed=1)
    restored.compile(optimizer=keras.optimizers.Adam(1e-3))
    assert backup.restore(restored) == 2 and weights_equal(restored.get_weights(), saved["weights"])


def test_a_model_on_a_full_disk_keeps_the_model_written_before(tmp_path, monkeypatch):
    model = small_model()
    path = tmp_path / "model.keras"
    write_atomically(path, model.save, checksum=True)
    before = snapshot(tmp_path)
    model.set_weights([w + 1 for w in model.get_weights()])
    for syncs in (0, 1):  # the model, or its checksum, finds the disk full
        monkeypatch.setattr(storage, "os", FullDisk(syncs=syncs))
        with pytest.raises(DiskFullError, match=f"no space left on the device to write {path}"):
            write_atomically(path, model.save, checksum=True)
        assert snapshot(tmp_path) == before and damage(path) is None
    monkeypatch.setattr(storage, "os", os)
    write_atomically(path, model.save, checksum=True)
    assert damage(path) is None
    assert np.array_equal(keras.models.load_model(path).get_weights()[0], model.get_weights()[0])


@pytest.mark.slow
def test_a_run_on_a_full_disk_fails_with_its_row_in_the_message(tmp_path, monkeypatch):
    from experiments import run
    from tests.helpers import parsed_flags, toy_npz

    flags = [
        "run",
        f"--dataset={toy_npz(tmp_path, 200)}",
        "--pretrain_epochs=0",
        "--pair_tuning_epochs=0",
        "--epochs=1",
        "--latent_dim=2",
        "--batch_size=64",
        "--verbose=0",
        f"--output_dir={tmp_path / 'out'}",
        f"--cache_dir={tmp_path / 'cache'}",
    ]
    monkeypatch.setattr(results, "os", FullDisk(room=100))
    with parsed_flags(flags), pytest.raises(SystemExit) as raised:
        exit_on_user_error(run.main)(["run"])
    message = str(raised.value)
    assert message.startswith(f"error: no space left on the device to write {tmp_path / 'out' / 'results.csv'}")
    assert "this row was not written: {'dataset': 'toy'" in message and "'acc': " in message
    assert (tmp_path / "out" / "results.csv").read_bytes() == b""
