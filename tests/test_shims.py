"""The shims over Keras' and scikit-learn's private methods: they fail here, loudly, when an upgrade changes them."""

import inspect

import keras
import numpy as np
import pytest
import tensorflow as tf
from sklearn.mixture import GaussianMixture

from dcgmm_tf.shims import (
    PRIVATE_METHODS,
    EqualWeightGaussianMixture,
    InPlaceDiagonalGaussianMixture,
    PrebuiltModel,
    ScaleWhenClipping,
)


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


class ClippingSGD(ScaleWhenClipping, keras.optimizers.SGD):
    pass


@pytest.mark.parametrize("limit", [300.0, 3.0, 0.7, 1e-3])
@pytest.mark.parametrize("compiled", [False, True])
def test_the_clipping_gives_keras_gradients_to_the_bit(limit, compiled):
    rng = np.random.default_rng(0)
    shapes = [(50, 30), (30,), (30, 4)]
    grads = [tf.constant(rng.normal(0, 0.1, s).astype(np.float32)) for s in shapes]
    nan = [grads[0], tf.constant(np.full((30,), np.nan, np.float32)), grads[2]]
    ours, keras_own = ClippingSGD(global_clipnorm=limit), keras.optimizers.SGD(global_clipnorm=limit)
    clip, expected = ours._clip_gradients, keras_own._clip_gradients
    if compiled:
        clip, expected = tf.function(clip), tf.function(expected)
    for case in (grads, nan, [grads[0], None, grads[2]]):
        got, want = clip(case), expected([g for g in case if g is not None])
        assert [g is None for g in got] == [g is None for g in case]
        for g, w in zip([g for g in got if g is not None], want):
            np.testing.assert_array_equal(g.numpy().view(np.int32), w.numpy().view(np.int32))
    clipped = clip(grads)
    if limit < float(tf.linalg.global_norm(grads)):  # scaled down to the limit
        assert float(tf.linalg.global_norm(clipped)) == pytest.approx(limit, rel=1e-5)
    else:
        np.testing.assert_array_equal(clipped[0].numpy(), grads[0].numpy())


def test_without_a_global_limit_the_clipping_is_keras_own():
    grads = [tf.constant([3.0, 4.0])]
    np.testing.assert_allclose(ClippingSGD(clipnorm=1.0)._clip_gradients(grads)[0], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_array_equal(ClippingSGD()._clip_gradients(grads)[0], [3.0, 4.0])


def test_equal_weights_stay_equal_through_em():
    rng = np.random.default_rng(0)
    z = np.concatenate([rng.normal(0, 1, (300, 2)), rng.normal(6, 1, (100, 2))])
    gmm = EqualWeightGaussianMixture(2, covariance_type="diag", random_state=0).fit(z)
    np.testing.assert_array_equal(gmm.weights_, [0.5, 0.5])
    assert sorted(np.round(gmm.means_[:, 0]).astype(int).tolist()) == [0, 6]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_in_place_diagonal_mixture_is_scikit_learns_to_the_bit(dtype, seed):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 3.0, (8, 5))
    x = (centres[rng.integers(0, 8, 3000)] + rng.normal(0.0, rng.uniform(0.3, 2.0, 5), (3000, 5))).astype(dtype)
    ours = InPlaceDiagonalGaussianMixture(30, covariance_type="diag", random_state=seed).fit(x)
    stock = GaussianMixture(30, covariance_type="diag", random_state=seed).fit(x)
    assert ours.n_iter_ == stock.n_iter_ > 2 and ours.lower_bound_ == stock.lower_bound_
    for name in ("weights_", "means_", "covariances_", "precisions_cholesky_"):
        assert getattr(ours, name).tobytes() == getattr(stock, name).tobytes(), name
    assert ours.predict_proba(x).tobytes() == stock.predict_proba(x).tobytes()
    assert ours.score_samples(x).tobytes() == stock.score_samples(x).tobytes()
    np.testing.assert_array_equal(ours.predict(x), stock.predict(x))
