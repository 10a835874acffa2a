"""FusedAdam: the same updates as keras.optimizers.Adam."""

import keras
import numpy as np
import pytest

from dcgmm_tf import ConstraintSet
from dcgmm_tf.optimizers import FusedAdam, adam
from dcgmm_tf.pair_tuning import tune_with_pairs
from dcgmm_tf.pretraining import pretrain_autoencoder
from tests.helpers import small_model, toy_data


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


def test_adam_is_fused_when_asked():
    assert type(adam(0.01, True)) is FusedAdam and type(adam(0.01, False)) is keras.optimizers.Adam


def test_pretraining_and_tuning_with_the_fused_adam_match_keras_adam():
    """The pretraining and the tuning with the pairs give Keras' Adam's weights to rounding with FusedAdam."""
    x, y = toy_data(256)
    constraints = ConstraintSet.from_labels(y, 60, seed=0)
    weights = {}
    for fused in (False, True):
        model = small_model()
        start = model.get_weights()
        pretrain_autoencoder(model, x, epochs=2, batch_size=64, seed=0, verbose=0, fused_adam=fused)
        tune_with_pairs(model, x, constraints, epochs=2, weight=10.0, seed=0, batch_size=64, fused_adam=fused)
        weights[fused] = model.get_weights()
    moved = max(float(np.abs(w - s).max()) for w, s in zip(weights[False], start))
    assert moved > 0.005  # about 16 steps of 1e-3 and 1e-4
    for keras_adam, fused_adam in zip(weights[False], weights[True]):
        np.testing.assert_allclose(fused_adam, keras_adam, rtol=1e-4, atol=1e-5)
