"""bf16 mixed precision: the networks compute in bfloat16, the mixture and the losses stay float32."""

import keras
import numpy as np
import pytest

from dcgmm_tf import DCGMM, ConstraintSet, MLPDecoder, MLPEncoder
from dcgmm_tf.data import constrained_dataset


@pytest.fixture(name="bf16")
def fixture_bf16():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    yield
    keras.mixed_precision.set_global_policy("float32")


def test_bf16_model_trains_and_predicts(bf16):
    rng = np.random.default_rng(0)
    x = rng.random((64, 12)).astype(np.float32)
    model = DCGMM(
        (12,),
        num_clusters=3,
        seed=0,
        encoder=MLPEncoder(2, (16,), name="encoder"),
        decoder=MLPDecoder(12, (16,), name="decoder"),
    )
    assert model.encoder.compute_dtype == "bfloat16"
    assert model.cluster_means.dtype == "float32"
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    constraints = ConstraintSet.from_labels(rng.integers(0, 3, 64), 20, alpha=10.0, seed=0)
    history = model.fit(constrained_dataset(x, constraints, batch_size=16), epochs=2, verbose=0).history
    assert np.all(np.isfinite(history["loss"]))
    p = model.predict(x, verbose=0)  # call() reads the mixture in float32 under the autocast scope
    assert p.dtype == np.float32 and p.shape == (64, 3)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-5)


@pytest.mark.slow
def test_a_python_run_with_bf16_trains_in_bfloat16(tmp_path):
    """``train_and_evaluate`` applies the config's policy itself (no ``runtime.configure`` needed) and leaves the
    process's policy as it found it."""
    from dcgmm_tf.config import RunConfig, RuntimeConfig
    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.recipe import train_and_evaluate
    from tests.helpers import toy_npz

    config = RunConfig(
        dataset=toy_npz(tmp_path, 200, 50),
        epochs=1,
        pretrain_epochs=1,
        num_constraints=50,
        latent_dim=2,
        batch_size=32,
        mixed_precision="bf16",
    )
    runtime = RuntimeConfig(deterministic=False, verbose=0, output_dir=str(tmp_path / "out"), cache=False)
    assert keras.mixed_precision.global_policy().name == "float32"
    result = train_and_evaluate(config, load_dataset(config.dataset), runtime)
    model = result.trained.model
    assert model.dtype_policy.name == "mixed_bfloat16" and model.encoder.compute_dtype == "bfloat16"
    assert model.cluster_means.dtype == "float32" and np.isfinite(result.row["acc"])
    assert keras.mixed_precision.global_policy().name == "float32"


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_pair_tuning_under_mixed_precision(policy):
    """The tuning's pair term is float32 whatever the networks compute in, and fp16 gets Keras' loss scaling (which
    skips the first steps, their scaled gradients overflowing, hence 32 steps)."""
    from dcgmm_tf.pair_tuning import tune_with_pairs
    from tests.helpers import small_model, toy_data

    x, y = toy_data(64)
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = small_model(hidden=(16,))
        before = model.encoder.get_weights()
        tune_with_pairs(model, x, ConstraintSet.from_labels(y, 20, seed=0), epochs=4, weight=10.0, seed=0, batch_size=8)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    after = model.encoder.get_weights()
    assert all(np.isfinite(w).all() for w in after)
    assert not np.array_equal(before[0], after[0])  # the encoder trained


@pytest.mark.parametrize(
    "flags, expected",
    [
        ("fpu sse2 avx2 avx512f avx512_bf16 fma", True),
        ("fpu avx2 amx_tile amx_bf16", True),
        ("fpu avx2 avx512f", False),
    ],
)
def test_cpu_has_bf16_reads_the_flags_that_linux_lists(tmp_path, flags, expected):
    from dcgmm_tf.runtime import cpu_has_bf16

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: some avx512_bf16 CPU\nflags\t\t: {flags}\n\nprocessor\t: 1\n")
    assert cpu_has_bf16(str(cpuinfo)) is expected
    assert cpu_has_bf16(str(tmp_path / "missing")) is False  # another system: no bf16 assumed


def test_auto_precision_is_bf16_only_on_a_cpu_with_bf16_units(monkeypatch):
    from dcgmm_tf import runtime
    from dcgmm_tf.config import RunConfig

    for has_bf16, expected in ((True, "bf16"), (False, "off")):
        monkeypatch.setattr(runtime, "cpu_has_bf16", lambda has_bf16=has_bf16: has_bf16)
        assert runtime.resolved_precision("auto") == expected
        assert [runtime.resolved_precision(p) for p in ("off", "bf16", "fp16")] == ["off", "bf16", "fp16"]
        with runtime.precision_policy("auto"):
            assert keras.mixed_precision.global_policy().name == {"bf16": "mixed_bfloat16", "off": "float32"}[expected]
        assert keras.mixed_precision.global_policy().name == "float32"
    assert RunConfig().mixed_precision == "auto" and RunConfig.protocol("paper").mixed_precision == "off"


@pytest.mark.parametrize("method", ["sdec", "cidec"])
def test_the_dec_baselines_train_under_bf16(bf16, method):
    """The encoder computes in bfloat16; the centres and the soft assignments stay float32."""
    from dcgmm_tf.baselines import CIDEC, SDEC, StackedAutoencoder

    rng = np.random.default_rng(0)
    x = rng.random((96, 6)).astype(np.float32)
    constraints = ConstraintSet.from_labels(rng.integers(0, 2, 96), 40, seed=0)
    autoencoder = StackedAutoencoder(6, latent_dim=2, hidden_units=(8, 8, 8))
    if method == "sdec":
        model = SDEC(autoencoder.encoder, 2, pair_weight=0.1)
    else:
        model = CIDEC(autoencoder.encoder, autoencoder.decoder, 2)
    assert autoencoder.encoder.compute_dtype == "bfloat16"
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    model.initialize_centers(x)
    history = model.fit_clusters(x, constraints, epochs=2, batch_size=32, tol=0.0)
    assert len(history) == 2
    assert all(np.isfinite(h[name]) for h in history for name in model.loss_names if name in h)
    assert history[0].keys() >= {"cluster_kl"} | ({"pairwise"} if method == "sdec" else {"must_link", "cannot_link"})
    q = model.predict(x, verbose=0)
    assert q.dtype == np.float32 and model.clustering.centers.dtype == "float32"
    np.testing.assert_allclose(q.sum(-1), 1.0, rtol=1e-5)
