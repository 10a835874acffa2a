"""FusedAdam: the same updates as keras.optimizers.Adam."""

import keras
import numpy as np
import pytest

from dcgmm_tf.optimizers import FusedAdam


def run(optimizer, steps=6):
    rng = np.random.default_rng(0)
    variables = [
        keras.Variable(rng.normal(size=(7, 3)).astype(np.float32)),
        keras.Variable(rng.normal(size=(5,)).astype(np.float32)),
    ]
    for _ in range(steps):
        optimizer.apply([rng.normal(size=v.shape).astype(np.float32) for v in variables], variables)
    return [keras.ops.convert_to_numpy(v) for v in variables]


@pytest.mark.parametrize("kwargs", [{}, {"beta_1": 0.5, "beta_2": 0.9, "epsilon": 1e-3, "global_clipnorm": 1.0}])
def test_fused_adam_matches_keras_adam(kwargs):
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5, staircase=True)
    expected = run(keras.optimizers.Adam(schedule, **kwargs))
    start = run(None, steps=0)
    got = run(FusedAdam(schedule, **kwargs))
    for e, g, s in zip(expected, got, start):
        assert np.abs(e - s).max() > 0.05  # the steps moved the variables
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_fused_adam_serialises_and_rejects_amsgrad():
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(FusedAdam(0.01, beta_1=0.8)))
    assert isinstance(restored, FusedAdam) and restored.beta_1 == 0.8
    with pytest.raises(ValueError, match="amsgrad"):
        FusedAdam(amsgrad=True)
