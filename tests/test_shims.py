"""The shims over Keras' and scikit-learn's private methods: they fail here, loudly, when an upgrade changes them."""

import inspect

import keras
import numpy as np
import pytest

from dcgmm_tf.shims import PRIVATE_METHODS, EqualWeightGaussianMixture, PrebuiltModel


@pytest.mark.parametrize("owner, name", list(PRIVATE_METHODS))
def test_the_private_methods_the_shims_override_are_there_with_their_arguments(owner, name):
    method = getattr(owner, name, None)
    assert method is not None, f"{owner.__name__}.{name} is gone: dcgmm_tf/shims.py needs a new hook"
    found = tuple(inspect.signature(method).parameters)[1:]
    assert found == PRIVATE_METHODS[owner, name], (
        f"{owner.__name__}.{name} now takes {found}: check dcgmm_tf/shims.py against this version"
    )


class Tiny(PrebuiltModel):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(2)

    def call(self, x):
        return self.dense(x)


def test_a_built_model_skips_the_symbolic_build_and_builds_its_optimizer(monkeypatch):
    def refuse(self, iterator=None, data_batch=None):
        raise AssertionError("Keras' symbolic build ran")

    monkeypatch.setattr(keras.Model, "_maybe_symbolic_build", refuse)
    model = Tiny()
    model.build((None, 3))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    assert not model.optimizer.built
    model._maybe_symbolic_build()
    assert model.optimizer.built
    unbuilt = Tiny()
    unbuilt.compile(optimizer="adam")
    with pytest.raises(AssertionError, match="symbolic build ran"):  # not built: Keras' own build
        unbuilt._maybe_symbolic_build()


def test_equal_weights_stay_equal_through_em():
    rng = np.random.default_rng(0)
    z = np.concatenate([rng.normal(0, 1, (300, 2)), rng.normal(6, 1, (100, 2))])
    gmm = EqualWeightGaussianMixture(2, covariance_type="diag", random_state=0).fit(z)
    np.testing.assert_array_equal(gmm.weights_, [0.5, 0.5])
    assert sorted(np.round(gmm.means_[:, 0]).astype(int).tolist()) == [0, 6]
