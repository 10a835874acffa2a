"""The benchmark helpers that turn a TensorFlow profile into the step breakdown of docs/performance.md."""

import json

import numpy as np
import pytest
import tensorflow as tf

from bench.common import pair_batch, reference_matmuls, step_matmuls
from bench.op_profile import PARTS, categorize, parts, profile_op_times
from dcgmm_tf import DCGMM
from dcgmm_tf.networks import MLPDecoder, MLPEncoder
from dcgmm_tf.optimizers import FusedAdam


@pytest.mark.parametrize(
    "name, op_type, part",
    [
        ("fused_adam/ResourceApplyAdam", "ResourceApplyAdam", "optimizer"),
        ("fused_adam_1/Pow", "Pow", "optimizer"),
        ("encoder_1/dense_0_1/Relu", "_MklNativeFusedMatMul", "layer matmuls"),
        ("gradient_tape/decoder_1/dense_1/MatMul_1", "_MklMatMul", "layer matmuls"),
        ("gradient_tape/MatMul/MatMul", "_MklBatchMatMulV2", "backward, other"),
        ("gradient_tape/encoder_1/dense_0_1/ReluGrad", "ReluGrad", "backward, other"),
        ("Bernoulli/log_prob/Softplus", "Softplus", "forward, other"),
        ("fused_adamant/Mul", "Mul", "forward, other"),
    ],
)
def test_categorize(name, op_type, part):
    assert categorize(name, op_type, "fused_adam") == part


def test_step_matmuls_skip_the_input_gradient_of_the_first_layer():
    shapes = [(8, 4), (4, 2)]
    assert step_matmuls(shapes, 16, shapes[0]) == [(16, 8, 4), (8, 16, 4), (16, 4, 2), (4, 16, 2), (16, 2, 4)]


def test_profile_of_a_training_step_finds_every_part():
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
    step = tf.function(model.train_step)
    step((x, w))
    op_times = profile_op_times(step, ((x, w),), steps=2)
    assert (f"{model.optimizer.name}/ResourceApplyAdam", "ResourceApplyAdam") in op_times  # fused_adam[_N]
    by_part = parts(op_times, model.optimizer.name)
    assert set(by_part) == set(PARTS) and all(seconds > 0 for seconds in by_part.values())
    reference, operands, flop = reference_matmuls(model, 32)
    # encoder 12-16, 16-2 (mean), 16-2 (log-variance); decoder 2-16, 16-12: 5 forward, 5 dW, 4 dX matmuls
    assert len(reference(operands)) == 14
    assert flop == 2 * 32 * (12 * 16 + 3 * 16 * 2 + 16 * 12) * 3 - 2 * 32 * 12 * 16


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


def test_gpu_check_says_no_gpu_on_this_cpu_and_runs_its_steps_shortened(tmp_path, capsys):
    from bench.gpu_check import STEPS, gpu_check

    summary = gpu_check(tmp_path, smoke=True, only=["pipeline_rate", "scale"])
    assert summary["gpus"] == [] and "no GPU" in capsys.readouterr().err
    assert set(summary["steps"]) == {"pipeline_rate", "scale"} and set(summary["steps"]) < set(STEPS)
    assert all(step["exit_code"] == 0 for step in summary["steps"].values())
    assert json.loads((tmp_path / "card.json").read_text()) == {"gpus": []}
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
