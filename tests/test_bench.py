"""The benchmark helpers and the device checks of docs/performance.md."""

import json

import numpy as np
import pytest
import tensorflow as tf

from bench.common import pair_batch, reference_matmuls, step_matmuls
from dcgmm_tf import DCGMM
from dcgmm_tf.networks import MLPDecoder, MLPEncoder
from dcgmm_tf.optimizers import FusedAdam


def test_step_matmuls_skip_the_input_gradient_of_the_first_layer():
    shapes = [(8, 4), (4, 2)]
    assert step_matmuls(shapes, 16, shapes[0]) == [(16, 8, 4), (8, 16, 4), (16, 4, 2), (4, 16, 2), (16, 2, 4)]


def test_reference_matmuls_count_the_flop_of_a_training_step():
    x_all = np.random.default_rng(0).random((64, 12), dtype=np.float32)
    x, w = pair_batch(x_all, 32)
    assert int(tf.math.count_nonzero(w)) == 32 and np.allclose(w.numpy(), w.numpy().T)
    model = DCGMM(
        (12,),
        num_clusters=3,
        seed=0,
        encoder=MLPEncoder(2, (16,), name="encoder"),
        decoder=MLPDecoder(12, (16,), name="decoder"),
    )
    model.compile(optimizer=FusedAdam(1e-3))
    tf.function(model.train_step)((x, w))
    reference, operands, flop = reference_matmuls(model, 32)
    # encoder 12-16, 16-2 (mean), 16-2 (log-variance); decoder 2-16, 16-12: 5 forward, 5 dW, 4 dX matmuls
    assert len(reference(operands)) == 14
    assert flop == 2 * 32 * (12 * 16 + 3 * 16 * 2 + 16 * 12) * 3 - 2 * 32 * 12 * 16


@pytest.mark.slow
def test_device_check_runs_each_variant_and_reports_the_device():
    from bench.device_check import gpu_names, run_variant, table

    results = [
        run_variant(precision, xla, batch=32, timed_steps=1, epoch_samples=64, input_dim=12, hidden=(16,))
        for precision, xla in (("fp32", False), ("fp16", False))
    ]  # XLA: bench/results/device_check.jsonl
    for r in results:
        assert "error" not in r, r
        assert r["loss_finite"] and r["epoch_loss_finite"] and r["step_ms"] > 0 and r["epoch_s"] > 0
        assert ("GPU" if gpu_names() else "CPU") in r["step_device"]
    assert results[1]["optimizer"] == "LossScaleOptimizer"  # fp16: Keras scales the loss
    text = table(results + [{"precision": "fp16", "xla": True, "error": "XlaRuntimeError: no kernel"}])
    assert len(text.splitlines()) == 4 and "failed: XlaRuntimeError" in text


@pytest.mark.slow
def test_gpu_check_names_the_gpus_or_says_none_and_runs_its_steps_shortened(tmp_path, capsys):
    from bench.gpu_check import STEPS, gpu_check

    summary = gpu_check(tmp_path, smoke=True, only=["pipeline_rate", "scale"])
    gpus = summary["gpus"]
    assert ("no GPU" in capsys.readouterr().err) == (not gpus)
    assert set(summary["steps"]) == {"pipeline_rate", "scale"} and set(summary["steps"]) < set(STEPS)
    assert all(step["exit_code"] == 0 for step in summary["steps"].values())
    assert json.loads((tmp_path / "card.json").read_text()) == {"gpus": gpus}
    scale = json.loads((tmp_path / "scale.jsonl").read_text().splitlines()[-1])
    assert scale["n"] == 2000 and scale["epoch"] > 0 and scale["peak_gb"] > scale["framework_gb"] > 0
    peaks = list(scale["peak_after"].values())  # data, pretrain, start, epochs, restart, predict
    assert len(peaks) == 6 and peaks == sorted(peaks) and round(peaks[-1], 2) == scale["peak_gb"]
    assert (
        0 < scale["restart_gmm"]
        and 0 < scale["restart_em"]
        and scale["restart_gmm"] + scale["restart_em"] < scale["restart"]
    )
    assert (tmp_path / "pipeline_rate.jsonl").stat().st_size > 0
    with pytest.raises(ValueError, match="unknown steps"):
        gpu_check(tmp_path, smoke=True, only=["nothing"])


def test_fallback_score_times_the_estimators_score_of_the_true_clustering():
    from bench import fallback_score
    from dcgmm_tf import paired_mixture
    from dcgmm_tf.fallback import pair_scale

    result = fallback_score.measure(500, 3, 4, 50, ["diag", "full"])
    assert set(result["seconds"]) == set(result["objective"]) == {"diag", "full"}
    x, labels, pairs = fallback_score.clusters(500, 3, 4, 50)
    clusterings = {"truth": labels, "shuffled": np.random.default_rng(1).permutation(labels)}
    for kind, objective in result["objective"].items():  # what was timed: the truth, the pairs at the estimator's share
        scored = paired_mixture.score_clusterings(x, pairs, clusterings, 4, kind, pair_scale(50, 500))
        assert objective == scored["truth"].objective > scored["shuffled"].objective


def test_input_gmm_times_the_estimators_two_floors_and_one():
    from bench import input_gmm

    result = input_gmm.measure(300, 4, 3)
    assert set(result) == {"two floors", "one floor"}
    # Clusters of independent features: the BIC of either floor prefers the diagonal covariances.
    assert [r["covariance"] for r in result.values()] == ["diag", "diag"]


@pytest.mark.slow
def test_phases_reports_each_phase_and_restart_of_a_run(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from tests.helpers import toy_npz

    data, output = toy_npz(tmp_path, 200), tmp_path / "phases.jsonl"
    flags = ["--epochs=2", "--pretrain_epochs=1", "--pair_tuning_epochs=1", "--restart_every=1", "--num_clusters=3"]
    flags += ["--num_constraints=100", "--latent_dim=2", "--batch_size=32", "--verbose=0", f"--output={output}"]
    cmd = [sys.executable, "-m", "bench.phases", f"--dataset={data}", *flags]
    proc = subprocess.run(cmd, cwd=Path(__file__).parents[1], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(output.read_text())
    assert list(result["phases_s"]) == ["pretraining", "tuning with the pairs", "the start (latent_class)", "training"]
    assert list(result["restarts_s"]) == ["1", "2"]  # every epoch, the last included
    assert sum(result["restarts_s"].values()) <= result["phases_s"]["training"]
    assert sum(result["phases_s"].values()) <= result["train_seconds"] + 0.2  # the phases lie within the run's time
    assert 0 < result["scores"]["acc"] <= 1


def test_estimator_time_times_a_fit_and_scores_its_labels():
    from bench import estimator_time

    x, y, constraints = estimator_time.case_data("digits")
    assert x.shape == (1797, 64) and 0 <= x.min() and x.max() <= 1 and len(constraints) == 1500
    with pytest.raises(ValueError, match="case"):
        estimator_time.case_data("iris")
    result = estimator_time.measure("table", epochs=1, pretrain_epochs=1, input_start=False)
    assert (result["num_samples"], result["num_features"], result["num_pairs"]) == (1000, 20, 0)
    assert (
        result["epochs"] == result["epochs_run"] == 1 and result["hidden_units"] == [64, 64] and result["seconds"] > 0
    )
    assert -1 <= result["ari"] <= 1 and result["start"] == "embedding"
