"""Two worker processes on 127.0.0.1 (MultiWorkerMirroredStrategy): the same steps as one device, and the runner
end to end (start, restarts, evaluation, the results row) on both."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.local_workers import cluster_configs, run_local_workers, start_local_workers
from tests.helpers import parsed_flags, toy_npz

REPO = Path(__file__).resolve().parents[1]


def one_epoch(out: str) -> None:
    """One epoch of SGD on a tiny problem, on one device (no TF_CONFIG) or as a worker of TF_CONFIG's cluster;
    the weights and the loss go to ``out`` (npz). A worker runs it in a fresh process: the strategy must come
    first."""
    import keras
    import tensorflow as tf

    from dcgmm_tf.data.pipeline import constrained_dataset
    from dcgmm_tf.distribute import distributed_constrained_dataset
    from tests.helpers import noise_free_model, replica_problem

    strategy = tf.distribute.MultiWorkerMirroredStrategy() if "TF_CONFIG" in os.environ else None
    batch = 32
    x, constraints = replica_problem()

    def build():
        keras.utils.set_random_seed(0)
        model = noise_free_model()  # the steps of one device and of the workers differ only in their noise
        model.optimizer.build(model.trainable_variables)
        return model

    if strategy is None:
        model = build()
        initial = model.get_weights()
        loss = model.fit(constrained_dataset(x, constraints, batch_size=batch, seed=0), epochs=1, verbose=0)
    else:
        with strategy.scope():
            model = build()
        initial = model.get_weights()
        data, steps = distributed_constrained_dataset(strategy, x, constraints, batch_size=batch, seed=0)
        loss = model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0)
    weights = {f"w{k}": w for k, w in enumerate(model.get_weights())}
    change = max(float(np.abs(a - b).max()) for a, b in zip(weights.values(), initial))
    np.savez(out, loss=np.float32(np.ravel(loss.history["loss"])[0]), change=np.float32(change), **weights)


def run_one_epoch(out: Path, tf_config: str | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    if tf_config:
        env["TF_CONFIG"] = tf_config
    code = f"import tests.test_multiworker as t; t.one_epoch({str(out)!r})"
    return subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_two_workers_take_the_steps_of_one_device(tmp_path):
    procs = [run_one_epoch(tmp_path / f"worker{k}.npz", c) for k, c in enumerate(cluster_configs(2))]
    one_epoch(str(tmp_path / "single.npz"))  # one device: in this process, while the workers run
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
    single, *workers = (np.load(tmp_path / f"{name}.npz") for name in ("single", "worker0", "worker1"))
    assert len(single.files) == len(workers[0].files) > 10
    assert float(single["change"]) > 1e-2  # the epoch moved the weights ...
    for worker in workers:
        assert float(worker["loss"]) == pytest.approx(float(single["loss"]), rel=1e-4)
        gap = max(float(np.abs(worker[k] - single[k]).max()) for k in single.files if k.startswith("w"))
        assert gap < 1e-4  # ... as on the two workers, to the tolerance of tests/test_distribute.py


def worker_flags(tmp_path, epochs):
    """The runner's flags of the tests below (tiny data, a cache in ``tmp_path``), after filling the cache with the
    pretraining that every worker loads, by one run in this process."""
    flags = [
        f"--dataset={toy_npz(tmp_path, 200)}",
        "--pretrain_epochs=1",
        "--pair_tuning_epochs=0",
        "--latent_dim=2",
        "--batch_size=64",
        f"--epochs={epochs}",
        "--restart_every=1",
        "--eval_every=1",
        "--num_constraints=100",
        "--threads=1",
        "--verbose=0",
        f"--cache_dir={tmp_path / 'cache'}",
    ]
    from experiments import run

    with parsed_flags(["run", *flags, "--epochs=1", f"--output_dir={tmp_path / 'single'}"]) as values:
        run.run(*run.configs(values))
    assert list((tmp_path / "cache").glob("*.weights.h5"))
    return flags


def check_equal_rows(workers: Path, epochs: int) -> None:
    """Each worker wrote one results row, the same (but for its time), and the same history of ``epochs`` lines."""
    logs = [(workers / f"worker{k}.log").read_text()[-3000:] for k in range(2)]
    rows = [pd.read_csv(workers / f"worker{k}" / "results.csv") for k in range(2)]
    assert len(rows[0]) == len(rows[1]) == 1, logs
    same = [c for c in rows[0].columns if c != "train_seconds"]
    assert rows[0][same].equals(rows[1][same])
    assert rows[0]["epochs"].item() == epochs and np.isfinite(rows[0][["acc", "nmi", "ari"]].to_numpy()).all()
    runs = [workers / f"worker{k}" / "runs" / "dcgmm-toy-seed0" for k in (0, 1)]
    histories = [pd.read_csv(run / "history.csv") for run in runs]
    assert histories[0]["loss"].tolist() == histories[1]["loss"].tolist()
    assert histories[0]["epoch"].tolist() == list(range(epochs))  # one line per epoch, none lost or repeated
    assert not [p for run in runs for p in run.glob("backup-*")]  # deleted at the end


@pytest.mark.slow
def test_two_workers_of_the_runner_write_the_same_row(tmp_path):
    flags = worker_flags(tmp_path, epochs=2)
    codes = run_local_workers(2, flags, tmp_path / "workers", timeout=300)
    logs = [(tmp_path / "workers" / f"worker{k}.log").read_text()[-3000:] for k in range(2)]
    assert codes == [0, 0], logs
    check_equal_rows(tmp_path / "workers", epochs=2)


@pytest.mark.slow
def test_both_workers_killed_resume_from_one_epoch_and_write_equal_rows(tmp_path):
    """Both workers are killed with SIGKILL once each holds two backups (two epochs or more, while the next one
    trains); worker 1's newest backup is removed, as if it had died just before writing it. Started again, both
    resume from the newest epoch they both have."""
    epochs, workers = 6, tmp_path / "workers"
    flags = worker_flags(tmp_path, epochs)
    processes = start_local_workers(2, flags, workers)
    runs = [workers / f"worker{k}" / "runs" / "dcgmm-toy-seed0" for k in (0, 1)]
    deadline = time.monotonic() + 300
    while min(len(list(run.glob("backup-*/epoch-*.npz"))) for run in runs) < 2 and time.monotonic() < deadline:
        assert all(p.poll() is None for p in processes), (workers / "worker0.log").read_text()[-3000:]
        time.sleep(0.02)
    for process in processes:
        os.kill(process.pid, signal.SIGKILL)
    for process in processes:
        process.wait()
    backups = [sorted(run.glob("backup-*/epoch-*.npz")) for run in runs]
    assert not (workers / "worker0" / "results.csv").exists()  # killed mid-training
    newest = [int(b[-1].name[6:11]) for b in backups]
    assert len(backups[1]) == 2 and max(newest) < epochs
    for path in (backups[1][-1], backups[1][-1].with_name(backups[1][-1].name + ".sha256")):
        path.unlink()
    have = [{int(b.name[6:11]) for b in run.glob("backup-*/epoch-*.npz")} for run in runs]
    agreed = max(have[0] & have[1], default=0)  # the newest epoch both have a backup of
    assert have[0] != have[1]
    logs = [(workers / f"worker{k}.log").read_text() for k in (0, 1)]
    processes = start_local_workers(2, flags, workers)
    codes = [process.wait(timeout=600) for process in processes]
    logs = [(workers / f"worker{k}.log").read_text()[len(log) :] for k, log in enumerate(logs)]  # the restart's
    assert codes == [0, 0], [log[-3000:] for log in logs]
    resumed = [f"resuming training after epoch {agreed} from" in log for log in logs]
    assert resumed == [agreed > 0] * 2, (agreed, have)
    check_equal_rows(workers, epochs)
