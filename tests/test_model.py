"""The DCGMM model: loss terms, VaDE special case, fit/predict, saving."""

import logging

import keras
import numpy as np
import pytest

from dcgmm_tf import DCGMM, ConstraintSet, MLPDecoder, MLPEncoder, losses, metrics, pretrain, start_mixture
from dcgmm_tf.data import constrained_dataset


def small_model(input_dim=20, num_clusters=2, latent_dim=2, seed=0, likelihood="bernoulli"):
    return DCGMM(
        (input_dim,),
        num_clusters=num_clusters,
        likelihood=likelihood,
        seed=seed,
        encoder=MLPEncoder(latent_dim, hidden_units=(64, 32), name="encoder"),
        decoder=MLPDecoder(input_dim, hidden_units=(32, 64), likelihood=likelihood, name="decoder"),
    )


def two_factor_data(n=1200, seed=0):
    """Vectors in [0,1]^20 from two binary factors; the labels are factor B.

    Factor A moves 16 features a little (with much noise), factor B moves 4 features a lot. Returns
    x, the labels B and the nuisance factor A.
    """
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = rng.integers(0, 2, n)
    x = np.empty((n, 20), np.float32)
    x[:, :16] = 0.3 + 0.4 * a[:, None] + rng.normal(0, 0.15, (n, 16))
    x[:, 16:] = 0.05 + 0.9 * b[:, None] + rng.normal(0, 0.03, (n, 4))
    return np.clip(x, 0, 1), b, a


def test_default_network_is_the_papers():
    model = DCGMM((784,), num_clusters=10)
    dense_shapes = [tuple(w.shape) for w in model.encoder.trainable_weights if len(w.shape) == 2]
    assert dense_shapes == [(784, 500), (500, 500), (500, 2000), (2000, 10), (2000, 10)]
    dense_shapes = [tuple(w.shape) for w in model.decoder.trainable_weights if len(w.shape) == 2]
    assert dense_shapes == [(10, 2000), (2000, 500), (500, 500), (500, 784)]
    assert model.cluster_means.shape == (10, 10) and model.cluster_variances.shape == (10, 10)


def test_cluster_parameters_are_trainable_weights():
    model = small_model()
    names = {v.name for v in model.trainable_variables}
    assert {"cluster_means", "cluster_raw_variances"} <= names


def test_zero_constraints_reduce_to_vade():
    """With W = 0 the C-ELBO is exactly VaDE's ELBO: same loss as a batch without W."""
    model = small_model()
    x, _, _ = two_factor_data(64)
    state = keras.ops.convert_to_numpy(model.seed_generator.state)
    vade = model.compute_loss_terms(x)
    model.seed_generator.state.assign(state)
    with_zero_w = model.compute_loss_terms(x, np.zeros((64, 64), np.float32))
    assert float(with_zero_w["constraint"]) == 0.0
    for name in ("loss", "reconstruction", "cluster_kl"):
        assert float(with_zero_w[name]) == pytest.approx(float(vade[name]), rel=1e-6)
    assert float(vade["loss"]) == pytest.approx(float(vade["reconstruction"] + vade["cluster_kl"]), rel=1e-6)


def test_constraint_term_uses_the_sampled_posteriors():
    model = small_model()
    x, _, _ = two_factor_data(4)
    w = np.zeros((4, 4), np.float32)
    w[0, 1] = w[1, 0] = 1e4
    terms = model.compute_loss_terms(x, w)
    assert -2e4 / 4 <= float(terms["constraint"]) < 0.0


def test_variance_floor():
    model = small_model()
    model.cluster_raw_variances.assign(np.full((2, 2), -80.0, np.float32))
    assert np.all(keras.ops.convert_to_numpy(model.cluster_variances) >= model.min_variance)


def test_set_cluster_parameters_validates_shapes():
    model = small_model()
    with pytest.raises(ValueError, match="shape"):
        model.set_cluster_parameters(np.zeros((3, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="positive"):
        model.set_cluster_parameters(np.zeros((2, 2)), np.zeros((2, 2)))


def test_predict_returns_cluster_probabilities_and_helpers_work():
    model = small_model(num_clusters=3)
    x, _, _ = two_factor_data(50)
    p = model.predict(x, verbose=0)
    assert p.shape == (50, 3)
    np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-5)
    assert model.embed(x).shape == (50, 2)
    samples = model.sample(cluster=1, num_samples=7, seed=0)
    assert samples.shape == (7, 20) and np.all((samples >= 0) & (samples <= 1))
    with pytest.raises(ValueError, match="cluster"):
        model.sample(cluster=3, num_samples=1)


def test_cluster_probabilities_are_predicts_a_batch_at_a_time():
    """Bit for bit what predict gives (also compiled for several steps per call, and on a last partial batch),
    without turning x into a dataset: predict holds two more copies of the data at its peak."""
    x, _, _ = two_factor_data(300)
    model = small_model(num_clusters=3)
    model.compile(optimizer="adam", steps_per_execution=4)
    p = model.cluster_probabilities(x, batch_size=128)
    np.testing.assert_array_equal(p, model.predict(x, batch_size=128, verbose=0))
    assert p.shape == (300, 3) and model.cluster_probabilities(x[:0]).shape == (0, 3)


def _train(x, y, constraints, seed=0, epochs=25, start_from=None, cache=None):
    """Pretrain (or load the pretraining from ``cache``), optionally start the clusters at the groups of
    ``start_from``, train, return accuracy."""
    keras.utils.set_random_seed(seed)
    model = small_model(seed=seed)
    pretrain(model, x, epochs=15, batch_size=64, seed=seed, cache_path=cache, verbose=0)
    start_mixture(model, x, "gmm", seed=seed)
    if start_from is not None:
        z = model.embed(x)
        groups = [z[start_from == g] for g in (0, 1)]
        model.set_cluster_parameters(np.stack([g.mean(0) for g in groups]), np.stack([g.var(0) for g in groups]))
    model.compile(optimizer=keras.optimizers.Adam(2e-3))
    history = model.fit(
        constrained_dataset(x, constraints, batch_size=64, seed=seed), epochs=epochs, verbose=0, shuffle=False
    )
    acc = metrics.cluster_accuracy(y, model.predict(x, verbose=0).argmax(-1))
    return model, acc, history


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_constraints_steer_clustering_on_synthetic_data(seed, tmp_path):
    """Both runs start from the same pretraining, with clusters that follow the nuisance factor A; only constraints
    move them to B."""
    x, y, a = two_factor_data(seed=seed)
    constraints = ConstraintSet.from_labels(y, 600, alpha=1e3, seed=seed)
    cache = tmp_path / "pretrained.weights.h5"
    _, acc_vade, _ = _train(x, y, ConstraintSet.empty(len(x)), seed=seed, epochs=10, start_from=a, cache=cache)
    model, acc_dcgmm, history = _train(x, y, constraints, seed=seed, epochs=10, start_from=a, cache=cache)
    assert all(np.isfinite(v) for v in history.history["loss"])
    assert acc_vade < 0.7, acc_vade
    assert acc_dcgmm > 0.9, acc_dcgmm
    satisfaction = metrics.constraint_satisfaction(constraints, model.predict(x, verbose=0).argmax(-1))
    assert satisfaction > 0.9, satisfaction


def test_the_embedding_pair_term_adds_to_the_constraint_and_survives_the_config():
    x, _, _ = two_factor_data(8)
    w = np.zeros((8, 8), np.float32)
    w[0, 1] = w[1, 0] = 1e4
    w[2, 3] = w[3, 2] = -1e4
    plain, anchored = small_model(), small_model()
    anchored.embedding_pair_weight = 10.0
    anchored.set_weights(plain.get_weights())
    state = keras.ops.convert_to_numpy(plain.seed_generator.state)
    terms = plain.compute_loss_terms(x, w)
    anchored.seed_generator.state.assign(state)
    with_term = anchored.compute_loss_terms(x, w)
    embedding_term = float(losses.batch_embedding_pair_term(plain.encoder(x)[0], w))
    assert embedding_term > 0.0
    assert float(with_term["constraint"]) == pytest.approx(float(terms["constraint"]) + 10.0 * embedding_term, rel=1e-5)
    assert float(with_term["reconstruction"]) == pytest.approx(float(terms["reconstruction"]), rel=1e-6)
    assert float(anchored.compute_loss_terms(x)["constraint"]) == 0.0  # batches without pairs (VaDE) unchanged
    restored = DCGMM.from_config(anchored.get_config())
    assert restored.embedding_pair_weight == 10.0
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="embedding_pair_weight"):
            DCGMM.from_config({**anchored.get_config(), "embedding_pair_weight": bad})


def test_keras_save_and_load_give_identical_predictions(tmp_path):
    x, y, _ = two_factor_data(200)
    model, _, _ = _train(x, y, ConstraintSet.from_labels(y, 50, seed=1), epochs=2)
    path = tmp_path / "dcgmm.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    assert isinstance(restored, DCGMM)
    np.testing.assert_array_equal(restored.predict(x, verbose=0), model.predict(x, verbose=0))
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(restored.cluster_variances), keras.ops.convert_to_numpy(model.cluster_variances)
    )


def test_evaluate_reports_every_loss_term():
    x, y, _ = two_factor_data(128)
    model = small_model()
    model.compile(optimizer="adam")
    scores = model.evaluate(
        constrained_dataset(x, ConstraintSet.from_labels(y, 20, seed=0), batch_size=32), verbose=0, return_dict=True
    )
    assert set(scores) == {"loss", "reconstruction", "cluster_kl", "constraint"}
    assert scores["loss"] == pytest.approx(
        scores["reconstruction"] + scores["cluster_kl"] + scores["constraint"], rel=1e-4
    )


def test_the_trackers_reset_and_report_in_compiled_calls_as_keras_would(monkeypatch):
    import tensorflow as tf

    x, y, _ = two_factor_data(128)
    model = small_model()
    model.compile(optimizer="adam")
    data = constrained_dataset(x, ConstraintSet.from_labels(y, 20, seed=0), batch_size=32)
    monkeypatch.setattr(keras.metrics.Mean, "reset_state", lambda self: pytest.fail("an eager reset of a tracker"))
    history = model.fit(data, epochs=2, verbose=0).history
    ours = model.get_metrics_result()
    keras_own = keras.Model.get_metrics_result(model)  # eager, a tracker at a time
    assert {name: float(value) for name, value in ours.items()} == {
        name: float(value) for name, value in keras_own.items()
    }
    assert float(ours["loss"]) == history["loss"][-1] != 0.0
    model.reset_metrics()
    assert all(float(variable) == 0.0 for tracker in model.metrics for variable in tracker.variables)
    with tf.distribute.OneDeviceStrategy("/cpu:0").scope():  # under a strategy Keras' own eager reset runs
        distributed = small_model()
    with pytest.raises(pytest.fail.Exception, match="eager reset"):
        distributed.reset_metrics()


def test_pretrain_cache_is_reused(tmp_path):
    x, _, _ = two_factor_data(128)
    cache = tmp_path / "ae.weights.h5"
    first = small_model(seed=3)
    assert pretrain(first, x, epochs=1, batch_size=64, seed=3, cache_path=cache, verbose=0) is False
    second = small_model(seed=4)
    assert pretrain(second, x, epochs=1, batch_size=64, seed=3, cache_path=cache, verbose=0) is True
    for a, b in zip(second.encoder.weights + second.decoder.weights, first.encoder.weights + first.decoder.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())  # the networks; the mixture is left to a start
    assert not np.array_equal(second.cluster_means.numpy(), first.cluster_means.numpy())
    with pytest.raises(ValueError, match="weights.h5"):
        pretrain(second, x, cache_path=tmp_path / "ae.h5")


def test_a_cache_written_with_its_gmm_still_loads(tmp_path):
    """Caches of pretrain() from before it cached the autoencoder only (with the fitted GMM in them) still load;
    the start is then computed again, as the GMM that pretrain() used to fit."""
    from dcgmm_tf.pretraining import fit_cluster_prior, pretrain_autoencoder, save_cached_weights

    x, _, _ = two_factor_data(128)
    cache = tmp_path / "ae.weights.h5"
    old = small_model(seed=3)
    pretrain_autoencoder(old, x, epochs=1, batch_size=64, seed=3, verbose=0)
    fit_cluster_prior(old, x, seed=3)
    save_cached_weights(old, cache)
    new = small_model(seed=4)
    assert pretrain(new, x, epochs=1, batch_size=64, seed=3, cache_path=cache, verbose=0) is True
    start_mixture(new, x, "gmm", seed=3)
    np.testing.assert_array_equal(new.predict(x, verbose=0), old.predict(x, verbose=0))


def test_models_of_any_k_share_one_pretraining_cache(tmp_path, caplog):
    """The runner's cache holds the autoencoder alone: a model of another K loads it and gets the networks its own
    pretraining gives; the file's name does not depend on K."""
    import h5py

    from dcgmm_tf import recipe
    from tests.helpers import weights_equal

    x, _, _ = two_factor_data(128)

    def pretrained(num_clusters, cache_dir):
        build = lambda seed: small_model(num_clusters=num_clusters, seed=seed)  # noqa: E731
        return recipe.pretrained_model(build, x, seed=3, epochs=1, batch_size=64, name="toy", cache_dir=cache_dir)

    def networks(model):
        return model.encoder.get_weights() + model.decoder.get_weights()

    caplog.set_level(logging.INFO)
    uncached = pretrained(5, None)
    assert weights_equal(networks(pretrained(2, tmp_path / "cache")), networks(uncached))  # pretrains, writes
    assert "pretrained weights loaded" not in caplog.text
    loaded = pretrained(5, tmp_path / "cache")
    assert "pretrained weights loaded" in caplog.text and weights_equal(networks(loaded), networks(uncached))
    (cache,) = (tmp_path / "cache").glob("*.weights.h5")
    with h5py.File(cache) as f:
        assert "vars" not in f or not len(f["vars"])  # no mixture in the file
    assert cache.name == recipe.cache_name(small_model(num_clusters=5, seed=3), x, 3, 1, 64, "toy")


def test_cluster_prior_from_labels_uses_class_statistics_of_the_embedding():
    from dcgmm_tf.pretraining import cluster_prior_from_labels

    x, y, _ = two_factor_data(200)
    model = small_model()
    cluster_prior_from_labels(model, x, y)
    z = model.embed(x)
    np.testing.assert_allclose(model.cluster_means.numpy(), [z[y == 0].mean(0), z[y == 1].mean(0)], rtol=1e-5)
    variances = np.maximum([z[y == 0].var(0), z[y == 1].var(0)], 2 * model.min_variance)  # the start's floor
    np.testing.assert_allclose(model.cluster_variances.numpy(), variances, rtol=1e-3)
    for bad in (np.zeros(200, int), np.full(200, 2), -y, y[:-1], y.astype(float)):  # missing class, out of range,
        with pytest.raises(ValueError, match="labels must be"):  # negative, wrong length, not integers
            cluster_prior_from_labels(model, x, bad)
