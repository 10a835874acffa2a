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
    model = DCGMM((12,), num_clusters=3, seed=0, encoder=MLPEncoder(2, (16,), name="encoder"),
                  decoder=MLPDecoder(12, (16,), name="decoder"))
    assert model.encoder.compute_dtype == "bfloat16"
    assert model.cluster_means.dtype == "float32"
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    constraints = ConstraintSet.from_labels(rng.integers(0, 3, 64), 20, alpha=10.0, seed=0)
    history = model.fit(constrained_dataset(x, constraints, batch_size=16), epochs=2, verbose=0).history
    assert np.all(np.isfinite(history["loss"]))
    p = model.predict(x, verbose=0)  # call() reads the mixture in float32 under the autocast scope
    assert p.dtype == np.float32 and p.shape == (64, 3)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-5)
