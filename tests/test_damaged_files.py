"""Damaged files on disk never crash a run or leak into results: each kind of file the program reads back,
truncated, emptied, overwritten with garbage, or replaced by a valid file of the wrong kind."""

import logging
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import keras
import numpy as np
import pytest

from dcgmm_tf import pretrain
from dcgmm_tf.baselines import StackedAutoencoder, pretrain_layerwise
from dcgmm_tf.callbacks import TrainingBackup, trim_history
from dcgmm_tf.pretraining import save_cached_weights
from dcgmm_tf.storage import damage, read_checked, write_atomically
from experiments import results
from tests.helpers import parsed_flags, small_model, toy_data, weights_equal

REPO = Path(__file__).resolve().parents[1]
KINDS = ("truncated", "empty", "garbage")


def spoil(path: Path, kind: str) -> None:
    """Damages a file the way a crash, a full disk or a bad copy does."""
    raw = path.read_bytes()
    path.write_bytes(
        {"truncated": raw[: len(raw) // 2], "empty": b"", "garbage": np.random.default_rng(0).bytes(len(raw))}[kind]
    )


@pytest.mark.parametrize("kind", KINDS)
def test_checksum_detects_each_kind_of_damage(tmp_path, kind):
    path = tmp_path / "f.bin"
    write_atomically(path, lambda tmp: tmp.write_bytes(bytes(range(256)) * 8), checksum=True)
    assert damage(path) is None and read_checked(path, Path.read_bytes)[1] is None
    spoil(path, kind)
    assert damage(path) is not None
    value, problem = read_checked(path, Path.read_bytes)
    assert value is None and problem == damage(path)


@pytest.mark.parametrize("kind", [*KINDS, "other model", "other model, no checksum"])
def test_damaged_pretraining_cache_is_rebuilt(tmp_path, kind, caplog):
    x, _ = toy_data(64)
    cache = tmp_path / "pretrain.weights.h5"
    reference = small_model(hidden=(32,))
    assert not pretrain(reference, x, epochs=1, batch_size=32, cache_path=cache, verbose=0)
    if kind.startswith("other model"):  # a valid weights file of another architecture under the expected name
        other = small_model(hidden=(8,))
        if kind == "other model":
            save_cached_weights(other, cache)
        else:
            cache.with_name(cache.name + ".sha256").unlink()
            other.save_weights(cache)
    else:
        spoil(cache, kind)
    caplog.set_level(logging.WARNING)
    model = small_model(hidden=(32,))
    assert not pretrain(model, x, epochs=1, batch_size=32, cache_path=cache, verbose=0)  # pretrained again
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name == "root"]
    assert len(warnings) == 1 and str(cache) in warnings[0] and "is damaged" in warnings[0], warnings
    assert weights_equal(model.get_weights(), reference.get_weights())
    assert damage(cache) is None
    assert pretrain(small_model(seed=5, hidden=(32,)), x, epochs=1, cache_path=cache, verbose=0)  # a cache hit


def test_damaged_autoencoder_cache_of_the_baselines_is_rebuilt(tmp_path, caplog):
    x, _ = toy_data(64)
    cache = tmp_path / "dec.weights.h5"
    autoencoder = StackedAutoencoder(20, 2, hidden_units=(16,))
    assert not pretrain_layerwise(autoencoder, x, layer_epochs=0, finetune_epochs=1, cache_path=cache)
    spoil(cache, "garbage")
    assert not pretrain_layerwise(
        StackedAutoencoder(20, 2, hidden_units=(16,)), x, layer_epochs=0, finetune_epochs=1, cache_path=cache
    )
    assert "is damaged" in caplog.text and damage(cache) is None


@pytest.mark.slow
def test_processes_sharing_a_cache_pretrain_once(tmp_path):
    """Two processes want the same missing cache entry at once: one pretrains, the other loads its file. The other
    process is this one, which asks once the first has opened the entry's lock."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from tests.helpers import small_model, toy_data
        from dcgmm_tf import pretrain
        x, _ = toy_data(512)
        cached = pretrain(small_model(hidden=(32,)), x, epochs=3, batch_size=32, cache_path=sys.argv[1], verbose=0)
        print("loaded" if cached else "pretrained")
    """)
    cache = tmp_path / "shared" / "pretrain.weights.h5"
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(cache)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lock = cache.with_name(cache.name + ".lock")
    deadline = time.monotonic() + 120
    while not lock.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    x, _ = toy_data(512)
    cached = pretrain(small_model(hidden=(32,)), x, epochs=3, batch_size=32, cache_path=cache, verbose=0)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    assert sorted([out.strip(), "loaded" if cached else "pretrained"]) == ["loaded", "pretrained"]
    assert damage(cache) is None and not list(cache.parent.glob(".tmp-*"))


@pytest.mark.parametrize("kind", [*KINDS, "other model"])
def test_damaged_backup_is_skipped_and_the_run_starts_over(tmp_path, kind, caplog):
    model = small_model(hidden=(32,))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    backup = TrainingBackup(tmp_path)
    backup.set_model(model)
    backup.on_epoch_end(2)
    if kind == "other model":
        other = small_model(hidden=(8,))
        other.compile(optimizer=keras.optimizers.Adam(1e-3))
        backup.set_model(other)
        backup.on_epoch_end(2)  # a whole, checksummed backup of another model under the same name
    else:
        spoil(tmp_path / "epoch-00003.npz", kind)
    caplog.set_level(logging.WARNING)
    assert backup.restore(model) == 0
    assert "epoch-00003.npz is damaged" in caplog.text and "the run starts from its beginning" in caplog.text


def test_older_backup_is_used_when_the_newest_is_damaged(tmp_path):
    model = small_model(hidden=(32,))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    backup = TrainingBackup(tmp_path)
    backup.set_model(model)
    backup.on_epoch_end(1)
    kept = (tmp_path / "epoch-00002.npz").read_bytes(), (tmp_path / "epoch-00002.npz.sha256").read_bytes()
    backup.on_epoch_end(2)
    (tmp_path / "epoch-00002.npz").write_bytes(kept[0])
    (tmp_path / "epoch-00002.npz.sha256").write_bytes(kept[1])
    spoil(tmp_path / "epoch-00003.npz", "truncated")
    assert backup.restore(model) == 2


RESULTS = """dataset,method,seed,acc,nmi,ari,config
toy,dcgmm,0,0.5,0.4,0.3,abc
toy,dcgmm,1,0.7
toy,dcgmm,2,nope,0.4,0.3,abc
toy,dcgmm,3,0.9,0.8,0.7,abc
toy,dcg"""


def test_damaged_result_lines_are_never_counted(tmp_path, caplog):
    path = tmp_path / "results.csv"
    path.write_text(RESULTS)
    rows = results.read_rows(path)
    assert rows["seed"].tolist() == [0, 3]
    for line in (3, 4, 6):
        assert f"results.csv: line {line} is damaged" in caplog.text
    assert results.has_row(path, {"seed": 3, "config": "abc"}) and not results.has_row(path, {"seed": 1})
    assert not results.has_row(path, {"seed": 2})
    results.append_row(
        path, {"dataset": "toy", "method": "dcgmm", "seed": 4, "acc": 0.6, "nmi": 0.5, "ari": 0.4, "config": "abc"}
    )
    assert results.read_rows(path)["seed"].tolist() == [0, 3, 4]
    summary = results.summarise(results.read_rows(path))
    assert summary.loc[0, "runs"] == 3 and summary.loc[0, "acc_mean"] == pytest.approx(2.0 / 3)


@pytest.mark.parametrize("content", [b"\x00\x17\xff garbage\n1,2,3\n", b"acc,acc\n1,2\n"])
def test_results_file_without_a_header_is_refused(tmp_path, content):
    path = tmp_path / "results.csv"
    path.write_bytes(content)
    for call in (
        lambda: results.read_rows(path),
        lambda: results.has_row(path, {"seed": 0}),
        lambda: results.append_row(path, {"seed": 0}),
    ):
        with pytest.raises(ValueError, match="does not start with a header line"):
            call()
    assert path.read_bytes() == content  # nothing written into somebody else's file


def test_damaged_history_lines_are_dropped_on_resume(tmp_path, caplog):
    path = tmp_path / "history.csv"
    path.write_text("epoch,loss\n0,1.5\n1,1.2,9\nx,3\n2,1.1\n3,1.0\n")
    trim_history(path, 3)
    assert path.read_text() == "epoch,loss\n0,1.5\n2,1.1\n"
    assert "line 3 is damaged" in caplog.text and "line 4 is damaged" in caplog.text
    path.write_bytes(b"\x00\xff\x13")
    trim_history(path, 3)
    assert not path.exists() and "it starts again" in caplog.text


@pytest.mark.parametrize("kind", [*KINDS, "other model"])
def test_damaged_saved_model_is_refused_with_what_to_do(tmp_path, kind):
    from dcgmm_tf.config import RunConfig, RuntimeConfig
    from dcgmm_tf.data import DataSplits
    from experiments import fig_common

    x, y = toy_data(40)
    data = DataSplits(x, y, x, y, name="toy", likelihood="bernoulli")
    config, runtime = RunConfig(), RuntimeConfig(output_dir=str(tmp_path))
    path = tmp_path / "runs" / "dcgmm-toy-seed0" / "model.keras"
    write_atomically(path, small_model(hidden=(32,)).save, checksum=True)
    assert fig_common.trained_model(config, data, runtime).num_clusters == 2
    if kind == "other model":  # a whole .keras file of another model under the name, its checksum not
        small_model(hidden=(8,)).save(path)
    else:
        spoil(path, kind)
    with pytest.raises(ValueError, match="model.keras is damaged: .* delete the figure's results.csv"):
        fig_common.trained_model(config, data, runtime)


@pytest.mark.slow
def test_the_runner_repairs_what_it_can_and_refuses_what_it_cannot(tmp_path):
    """Through the command line: a damaged cache and a damaged result line are reported in one line each and the
    run goes on (exit 0); a results file that was not written here stops the run before training (exit 1)."""
    from dcgmm_tf.validation import exit_on_user_error
    from experiments import run

    x, y = toy_data(200)
    np.savez(tmp_path / "toy.npz", x_train=x, y_train=y, x_test=x[:50], y_test=y[:50])
    args = [
        f"--dataset={tmp_path / 'toy.npz'}",
        "--epochs=1",
        "--pretrain_epochs=0",
        "--pair_tuning_epochs=0",
        "--num_constraints=50",
        "--latent_dim=2",
        "--batch_size=32",
        "--verbose=0",
        f"--cache_dir={tmp_path / 'cache'}",
        "--seed=5",
        "--cluster_init=gmm",
        "--restart_every=0",
        "--nodeterministic",
    ]
    with parsed_flags(["run", *args, f"--output_dir={tmp_path / 'first'}"]) as values:
        run.run(*run.configs(values))  # in this process: makes the cache entry
    refused = tmp_path / "refused"
    refused.mkdir()
    (refused / "results.csv").write_bytes(b"\x00\xff\x00 not a table")
    with pytest.raises(SystemExit) as exit_info, parsed_flags(["run", *args, f"--output_dir={refused}"]):
        exit_on_user_error(run.main)(["run"])
    assert str(exit_info.value.code).startswith(f"error: {refused / 'results.csv'} does not start with a header")
    assert not (refused / "runs").exists()  # stopped before training
    spoil(next((tmp_path / "cache").glob("pretrain-*seed5-*.weights.h5")), "garbage")
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.csv").write_text("dataset,method,seed,acc,nmi,ari,config\ntoy,dcgmm,0,0.5,0.4\n")
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.run", *args, f"--output_dir={out}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    damaged = [line for line in proc.stderr.splitlines() if "is damaged" in line]
    cache_lines = [line for line in damaged if "pretrain-" in line]
    assert len(cache_lines) == 1 and "building it again and replacing it" in cache_lines[0], damaged
    assert damaged and all("results.csv: line 2 is damaged" in line for line in damaged if line not in cache_lines)
    assert len(damaged) > len(cache_lines)
    assert results.read_rows(out / "results.csv")["seed"].tolist() == [5]


@pytest.mark.parametrize(
    "name, relative", [("reuters", "reuters/reutersidf10k.npy"), ("stl10", "stl10/stl10_resnet50.npz")]
)
def test_damaged_data_files_are_named_in_a_value_error(tmp_path, name, relative):
    from dcgmm_tf.data import load_dataset

    path = tmp_path / relative
    path.parent.mkdir(parents=True)
    path.write_bytes(np.random.default_rng(0).bytes(1000))
    with pytest.raises(ValueError, match=f"{path}.*(truncated or corrupt|truncated)"):
        load_dataset(name, tmp_path)


def test_a_valid_table_of_another_kind_is_refused_before_training(tmp_path):
    from dcgmm_tf.config import RunConfig, RuntimeConfig
    from dcgmm_tf.data import DataSplits
    from experiments import run

    x, y = toy_data(40)
    data = DataSplits(x, y, x, y, name="toy", likelihood="bernoulli")
    path = tmp_path / "results.csv"
    path.write_text("dataset,method,runs,acc_mean\ntoy,dcgmm,3,0.5\n")  # a summary.csv copied over results.csv
    with pytest.raises(ValueError, match=r"has no column\(s\) \['seed'\]: it is not a results file"):
        run.run_once(RunConfig(), data, RuntimeConfig(output_dir=str(tmp_path)), path)
    assert not (tmp_path / "runs").exists()
