"""The scikit-learn estimator: fitting with pairs or a ConstraintSet, scikit-learn's own tools and checks.

scikit-learn's checks: all 48 of `estimator_checks_generator(..., legacy=True)` were run on this estimator
(studies/README.md gives the command and the result). With the tiny schedule below every check passes
or is skipped by scikit-learn itself (the estimator is tagged non_deterministic: bit-identical refits need
TensorFlow's process-wide op determinism), except check_clustering, whose ARI > 0.4 on 50 blobs needs the full
default schedule (it passes with the defaults, 11 minutes). The suite runs the quick ones (`APPLICABLE_CHECKS`);
the regressor/classifier/sample_weight checks do not apply (a clusterer has no targets, DC-GMM no sample weights).
"""

import random

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import adjusted_rand_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler
from sklearn.utils import estimator_checks
from sklearn.utils._param_validation import InvalidParameterError

from dcgmm_tf import ConstraintSet, paired_mixture, starts
from dcgmm_tf.baselines import PCKMeans
from dcgmm_tf.estimator import DCGMMClustering
from dcgmm_tf.fallback import PAIR_RATE, pair_scale
from tests.helpers import TINY, recorded_keyword, toy_data, weights_equal

# PRETRAINED keeps one epoch of pretraining where the pretraining is part of what is tested.
PRETRAINED = {**TINY, "pretrain_epochs": 1}
PAPER_TINY = {**TINY, "hidden_units": (500, 500, 2000)}  # the paper's network, where a test needs it


def test_fit_with_pairs_gives_labels_probabilities_and_embedding():
    x, y = toy_data(200)
    ml = [(i, j) for i, j in zip(np.flatnonzero(y == 0)[:20], np.flatnonzero(y == 0)[20:40])]
    cl = [(i, j) for i, j in zip(np.flatnonzero(y == 0)[:20], np.flatnonzero(y == 1)[:20])]
    est = DCGMMClustering(2, **PRETRAINED).fit(x.astype(np.float64).tolist(), ml=ml, cl=cl)
    assert est.labels_.shape == (200,) and set(est.labels_) <= {0, 1} and est.n_features_in_ == 20
    proba = est.predict_proba(x)
    assert proba.shape == (200, 2) and np.allclose(proba.sum(1), 1, atol=1e-5)
    np.testing.assert_array_equal(est.predict(x), proba.argmax(-1))
    np.testing.assert_array_equal(est.labels_, est.predict(x))
    assert est.transform(x).shape == (200, 2) and est.likelihood_ == "gaussian"  # continuous: not an image
    assert len(est.constraints_) == 40 and est.constraints_.weight.max() == est.alpha
    assert len(est.history_["loss"]) == 2


def test_answers_spread_to_neighbours_train_with_more_pairs():
    x, y = toy_data(120)
    constraints = ConstraintSet.from_labels(y, 30, seed=0, alpha=100.0)
    est = DCGMMClustering(2, spread_neighbours=2, spread_weight=0.25, **TINY).fit(x, constraints=constraints)
    trained = est.constraints_
    assert len(constraints) < len(trained) <= 5 * len(constraints) and est.labels_.shape == (120,)
    assert set(np.abs(trained.weight)) == {100.0, 25.0}  # the given answers and the spread ones at a quarter
    bad_values = [
        ({"spread_neighbours": 1.5}, r"'spread_neighbours' parameter .* int in the range \[0, inf\)"),
        ({"spread_weight": 2.0}, r"'spread_weight' parameter .* in the range \(0.0, 1.0\]"),
    ]
    for bad, message in bad_values:
        with pytest.raises(ValueError, match=message):
            DCGMMClustering(2, **bad, **TINY).fit(x, constraints=constraints)


@pytest.mark.slow
def test_tuning_with_the_pairs_pulls_must_links_together():
    x, y = toy_data(120)
    constraints = ConstraintSet.from_labels(y, 60, seed=0)
    must, cannot = constraints.must_link_mask, constraints.cannot_link_mask

    def link_distance_ratio(est: DCGMMClustering) -> float:
        z = est.transform(x)
        distance = np.linalg.norm(z[constraints.i] - z[constraints.j], axis=1)
        return distance[must].mean() / distance[cannot].mean()

    # One start, the latent class one, whose restarts keep the tuned embedding's grouping.
    one = {**PRETRAINED, "cluster_init": "latent_class", "input_start": False, "likelihood": "bernoulli"}
    plain = DCGMMClustering(2, **one).fit(x, constraints=constraints)
    tuned = DCGMMClustering(2, pair_tuning_epochs=5, **one).fit(x, constraints=constraints)
    assert link_distance_ratio(tuned) < 0.85 * link_distance_ratio(plain)  # 0.61 against 0.81 here
    bad_values = [
        ({"pair_tuning_epochs": 1.5}, "'pair_tuning_epochs' parameter .* or a str among {'auto'}"),
        ({"pair_tuning_epochs": -1}, "pair_tuning_epochs"),
        ({"pair_tuning_weight": 0.0}, "pair_tuning_weight"),
    ]
    for bad, message in bad_values:
        with pytest.raises(ValueError, match=message):
            DCGMMClustering(2, **bad, **TINY).fit(x, constraints=constraints)


def test_the_starts_share_one_tuning_with_the_pairs(monkeypatch):
    """Both starts take the autoencoder tuned once, which holds the weights that a copy tuned on its own gets (the
    tuning depends on the autoencoder, the pairs and the seed alone)."""
    from dcgmm_tf.deep_fit import DeepFit

    x, y = toy_data(120)
    constraints = ConstraintSet.from_labels(y, 60, seed=0)
    tunings, alone, at_start = [], [], {}
    tune, start = DeepFit.tune, DeepFit.start

    def counted_tune(self, model, pairs, epochs):
        tunings.append(epochs)
        copy = self.on_autoencoder(model.num_clusters, model)
        tune(self, copy, pairs, epochs)
        alone.append(copy.encoder.get_weights() + copy.decoder.get_weights())
        tune(self, model, pairs, epochs)

    def recorded_start(self, model, pairs, input_clusters=None):
        at_start["embedding" if input_clusters is None else "input"] = (
            model.encoder.get_weights() + model.decoder.get_weights()
        )
        return start(self, model, pairs, input_clusters)

    monkeypatch.setattr(DeepFit, "tune", counted_tune)
    monkeypatch.setattr(DeepFit, "start", recorded_start)
    est = DCGMMClustering(2, pair_tuning_epochs=3, **PRETRAINED).fit(x, constraints=constraints)
    assert set(est.fit_losses_) == {"embedding", "input"} and tunings == [3]
    assert weights_equal(at_start["embedding"], alone[0]) and weights_equal(at_start["input"], alone[0])


def test_auto_tuning_only_with_answers_taken_as_right():
    from dcgmm_tf import default_alpha
    from dcgmm_tf.sizing import tuning_for

    x, y = toy_data(120)
    hard = ConstraintSet.from_labels(y, 60, seed=0)  # alpha 1e4, the paper's hard constraints
    soft = ConstraintSet.from_labels(y, 60, seed=0, q=0.2)  # alpha default_alpha(0.2)
    assert tuning_for("auto", hard) == "auto" and tuning_for("auto", ConstraintSet.empty(120)) == 0
    assert tuning_for("auto", soft) == 0 and tuning_for(3, soft) == 3  # asked for: as given
    mixed = ConstraintSet(
        hard.i, hard.j, np.where(np.arange(60) == 7, default_alpha(0.01), 1e4) * np.sign(hard.weight), 120
    )
    assert tuning_for("auto", mixed) == 0
    est = DCGMMClustering(2, **{**TINY, "pair_tuning_epochs": "auto"}).fit(x, constraints=soft)
    assert est.schedule_.pair_tuning_epochs == 0


def test_fit_with_a_constraint_set_and_without_constraints():
    x, y = toy_data(120)
    constraints = ConstraintSet.from_labels(y, 50, seed=0, alpha=500.0)
    est = DCGMMClustering(2, **TINY).fit(x, constraints=constraints)
    assert est.constraints_ is constraints
    vade = DCGMMClustering(2, **TINY).fit(x * 4 - 2)  # no constraints (VaDE); values outside [0, 1]
    assert vade.likelihood_ == "gaussian" and len(vade.constraints_) == 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"ml": [(0, 500)]}, "outside"),
        ({"ml": [(0, 1, 2)]}, r"ml must be index pairs of shape \[n, 2\]"),
        ({"ml": [(0, 1)], "cl": [(1, 0)]}, "both as a must-link and as a cannot-link"),
        ({"ml": [(0, 1)], "constraints": ConstraintSet.empty(40)}, "either as ml/cl pairs or as a ConstraintSet"),
        ({"constraints": ConstraintSet.empty(10)}, "the constraints index 10 samples but X holds 40"),
    ],
)
def test_bad_constraints_are_refused(kwargs, match):
    x, _ = toy_data(40)
    with pytest.raises(ValueError, match=match):
        DCGMMClustering(2, **TINY).fit(x, **kwargs)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_clusters": 0}, r"'n_clusters' parameter of DCGMMClustering must be an int in the range \[1, inf\) or a"),
        ({"n_clusters": 50}, r"n_clusters must be .auto. or an integer in \[1, n_samples=40\]"),  # depends on X
        ({"epochs": 0}, r"'epochs' parameter .* in the range \[1, inf\)"),
        ({"cluster_init": "spectral"}, "'cluster_init' parameter .* must be a str among"),
        ({"likelihood": "poisson"}, "'likelihood' parameter"),
        ({"alpha": -1.0}, r"'alpha' parameter .* in the range \(0.0, inf\)"),
        ({"hidden_units": (0, 3)}, "hidden_units must be 'auto' or a non-empty sequence of positive integers"),
        ({"n_clusters": "auto", "choice_rule": "median"}, "choice_rule"),
        ({"n_clusters": "auto", "choice_splits": 0}, "choice_splits"),
        ({"tol": 1.0}, r"'tol' parameter .* in the range \[0.0, 1.0\) or None"),
        ({"n_iter_no_change": 0}, r"'n_iter_no_change' parameter .* in the range \[1, inf\)"),
    ],
)
def test_bad_parameters_are_refused_at_fit(params, match):
    x, _ = toy_data(40)
    est = DCGMMClustering(**{**TINY, "n_clusters": 2, **params})  # __init__ only stores
    with pytest.raises(ValueError, match=match):  # scikit-learn's InvalidParameterError is a ValueError
        est.fit(x)


def test_unfitted_estimator_and_bad_input():
    x, _ = toy_data(40)
    for method in ("predict", "predict_proba", "transform"):
        with pytest.raises(NotFittedError):
            getattr(DCGMMClustering(), method)(x)
    est = DCGMMClustering(2, **TINY).fit(x)
    with pytest.raises(ValueError, match="20 features"):
        est.predict(x[:, :5])
    with pytest.raises(ValueError, match="NaN"):
        est.predict(np.where(np.eye(40, 20) > 0, np.nan, x))
    with pytest.raises(ValueError, match="Expected 2D array"):
        est.predict(x[0])


def test_clone_pipeline_and_saved_model(tmp_path):
    import keras

    x, y = toy_data(150)
    est = DCGMMClustering(2, **TINY)
    copy = clone(est)
    assert copy.get_params() == est.get_params() and not hasattr(copy, "model_")
    pipe = Pipeline([("scale", MinMaxScaler()), ("dcgmm", DCGMMClustering(2, **TINY))])
    labels = pipe.fit_predict(x * 255, dcgmm__ml=[(0, 1), (2, 3)], dcgmm__cl=[(0, int(np.argmax(y != y[0])))])
    assert labels.shape == (150,)
    assert pipe.set_params(dcgmm__epochs=3).get_params()["dcgmm__epochs"] == 3
    model = pipe.named_steps["dcgmm"].model_
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)


APPLICABLE_CHECKS = [
    estimator_checks.check_no_attributes_set_in_init,
    estimator_checks.check_parameters_default_constructible,
    estimator_checks.check_get_params_invariance,
    estimator_checks.check_set_params,
    estimator_checks.check_estimators_unfitted,
    estimator_checks.check_fit_check_is_fitted,
    estimator_checks.check_n_features_in,
    estimator_checks.check_estimators_dtypes,
    estimator_checks.check_estimators_nan_inf,
    estimator_checks.check_estimators_empty_data_messages,
    estimator_checks.check_dtype_object,
    estimator_checks.check_clusterer_compute_labels_predict,
    estimator_checks.check_fit2d_1feature,
    estimator_checks.check_fit2d_predict1d,
    estimator_checks.check_dont_overwrite_parameters,
    estimator_checks.check_param_validation,
]


@pytest.mark.parametrize("check", APPLICABLE_CHECKS, ids=lambda c: c.__name__)
def test_scikit_learn_checks(check):
    check("DCGMMClustering", DCGMMClustering(3, **TINY))


def test_pckmeans_takes_pairs_like_scikit_learn_clusterers():
    x, y = toy_data(100)
    ml = [(0, int(np.flatnonzero(y == y[0])[1]))]
    cl = [(0, int(np.argmax(y != y[0])))]
    by_pairs = PCKMeans(2, seed=0).fit(x, ml=ml, cl=cl)
    by_set = PCKMeans(2, seed=0).fit(x, ConstraintSet.from_pairs(100, ml, cl, weight=1.0))
    np.testing.assert_array_equal(by_pairs.labels_, by_set.labels_)
    np.testing.assert_array_equal(by_pairs.fit_predict(x, ml=ml, cl=cl), by_pairs.labels_)
    with pytest.raises(ValueError, match="either as ml/cl pairs or as a ConstraintSet"):
        PCKMeans(2).fit(x, ConstraintSet.empty(100), ml=ml)


@pytest.mark.slow
@pytest.mark.parametrize("likelihood", ["bernoulli", "gaussian"])
def test_an_affine_map_of_x_gives_the_same_clustering(likelihood):
    from sklearn.metrics import adjusted_rand_score

    x, y = toy_data(160)
    ml = [(i, j) for i, j in zip(np.flatnonzero(y == 0)[:10], np.flatnonzero(y == 0)[10:20])]
    cl = [(i, j) for i, j in zip(np.flatnonzero(y == 0)[:10], np.flatnonzero(y == 1)[:10])]
    params = {**PRETRAINED, "likelihood": likelihood}  # the pretraining on the raw scale too
    reference = DCGMMClustering(2, **params).fit(x.astype(np.float64), ml=ml, cl=cl)
    for a, b in [(1e-3, 0.0), (1e3, -50.0)]:
        est = DCGMMClustering(2, **params).fit(a * x.astype(np.float64) + b, ml=ml, cl=cl)
        assert np.isfinite(est.history_["loss"]).all()
        assert adjusted_rand_score(reference.labels_, est.labels_) > 0.95, (a, b)
        np.testing.assert_allclose(est.transform(a * x + b), reference.transform(x), atol=1e-3)


@pytest.mark.slow
def test_digits_with_pairs_into_and_out_of_0_1_give_the_same_clustering():
    from sklearn.datasets import load_digits
    from sklearn.metrics import adjusted_rand_score

    digits, y = load_digits(return_X_y=True)
    pairs = ConstraintSet.from_labels(y, 1500, alpha=1e4, seed=0)
    params = {**TINY, "latent_dim": 10, "epochs": 3, "pretrain_epochs": 2}
    fits = [DCGMMClustering(10, **params).fit(a * digits + b, constraints=pairs) for a, b in [(1 / 16, 0), (40, -300)]]
    assert [fit.likelihood_ for fit in fits] == ["bernoulli", "bernoulli"]
    scores = [adjusted_rand_score(y, fit.labels_) for fit in fits]
    # A clustering (random labels score 0 +- 0.001 here; this short fit scores .199 on an AVX2 CPU, more on others),
    # and the same one.
    assert scores[0] > 0.1 and abs(scores[0] - scores[1]) <= 0.05, scores


@pytest.mark.slow
def test_hidden_units_auto_give_tables_a_small_network():
    x, _ = toy_data(100)  # 20 features
    auto = {**TINY, "hidden_units": "auto"}
    assert DCGMMClustering().hidden_units == "auto"
    table = DCGMMClustering(2, **auto).fit(x)
    assert table.hidden_units_ == (64, 64) and table.model_.encoder.hidden_units == (64, 64)
    wide = DCGMMClustering(2, **auto).fit(np.hstack([x, x, x])[:, :51])  # more than TABLE_FEATURES = 50
    assert wide.hidden_units_ == wide.model_.encoder.hidden_units == (500, 500, 2000)
    with pytest.raises(InvalidParameterError, match="'hidden_units' parameter .* a str among {'auto'}"):
        DCGMMClustering(2, **{**TINY, "hidden_units": "big"}).fit(x)


def auto_likelihood(x: np.ndarray) -> str:
    """The estimator's likelihood="auto" for ``x``."""
    from dcgmm_tf import sizing

    return sizing.likelihood_for("auto", sizing.image_form(x))


def test_likelihood_auto_counts_values_and_an_affine_map_leaves_the_network_input_as_it_is():
    from sklearn.datasets import load_digits, load_iris
    from sklearn.preprocessing import StandardScaler

    from dcgmm_tf import sizing

    digits, _ = load_digits(return_X_y=True)  # 17 levels, half of the entries at 0
    reference = sizing.scaled(digits / 16, *sizing.input_scaling(digits / 16, "bernoulli"))
    for a, b in [(1 / 16, 0.0), (40.0, -300.0), (1e-3, 5.0), (-1.0, 0.0)]:  # into, out of, far from [0, 1]; mirrored
        x = a * digits + b
        likelihood = auto_likelihood(x)
        assert likelihood == "bernoulli", (a, b)
        seen = sizing.scaled(x, *sizing.input_scaling(x, likelihood))
        np.testing.assert_array_equal(seen, reference if a > 0 else 1 - reference)
    iris = StandardScaler().fit_transform(load_iris(return_X_y=True)[0])  # 123 values, none of them a background
    rng = np.random.default_rng(0)
    for table in (iris, 40 * iris - 300, (iris - iris.min()) / np.ptp(iris), rng.uniform(size=(100, 5))):
        assert auto_likelihood(table) == "gaussian"
    assert auto_likelihood(rng.choice([-1.0, 1.0], size=(50, 4))) == "bernoulli"  # binary features
    images = np.concatenate([np.arange(256.0), np.zeros(100)])[:, None]  # 256 levels, 28 % of the entries at 0
    assert auto_likelihood(images) == "bernoulli"
    assert auto_likelihood(np.append(images, 0.5)[:, None]) == "gaussian"  # 257 levels
    assert auto_likelihood(images[:256]) == "gaussian"  # one entry of 256 at each end
    assert sizing.likelihood_for("gaussian", None) == "gaussian"  # a likelihood given needs no counting
    with pytest.raises(ValueError, match="image_form"):
        sizing.likelihood_for("auto", None)


def test_an_image_set_standardised_feature_by_feature_is_brought_back_onto_0_1_one_feature_at_a_time():
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    from dcgmm_tf import sizing

    digits, _ = load_digits(return_X_y=True)
    low, high = digits.min(axis=0), digits.max(axis=0)
    reference = (digits - low) / np.where(high > low, high - low, 1.0)  # each pixel's own range onto [0, 1]
    rng = np.random.default_rng(0)
    maps = rng.uniform(0.1, 10.0, size=64), rng.uniform(-50.0, 50.0, size=64)
    for x in (StandardScaler().fit_transform(digits), maps[0] * digits + maps[1]):
        assert not sizing.image_like(x) and sizing.image_like(x, per_feature=True)  # no longer one scale of pixels
        assert auto_likelihood(x) == "bernoulli" and sizing.image_form(x) == "features"
        seen = sizing.scaled(x, *sizing.input_scaling(x, "bernoulli"))
        np.testing.assert_array_equal(seen, sizing.scaled(x, *sizing.input_scaling(x, "bernoulli", "auto", "features")))
        np.testing.assert_allclose(seen, reference, atol=1e-6)
    assert sizing.image_like(digits) and sizing.image_like(digits, per_feature=True)  # a whole image set: one map
    assert sizing.image_form(digits) == "whole"
    np.testing.assert_array_equal(sizing.input_scaling(digits, "bernoulli")[1], np.full(64, 16.0))
    # a table of continuous features, with or without a few discrete ones, stays Gaussian
    table = rng.normal(size=(1000, 8))
    assert not sizing.image_like(table, per_feature=True) and auto_likelihood(table) == "gaussian"
    assert auto_likelihood(np.hstack([table, rng.integers(0, 2, size=(1000, 1))])) == "gaussian"
    # few samples of continuous values with a background (HOG features of 240 digits, say): no repeated levels
    sparse = np.where(rng.uniform(size=(240, 6)) < 0.3, 0.0, rng.uniform(size=(240, 6)))
    assert not sizing.image_like(sparse, per_feature=True) and auto_likelihood(sparse) == "gaussian"
    # Bernoulli asked for on data that is not image-like keeps the one map of all of it
    np.testing.assert_array_equal(sizing.input_scaling(table, "bernoulli")[1], np.full(8, np.ptp(table)))


def test_scaling_statistics():
    from dcgmm_tf.sizing import input_scaling

    x = np.array([[0.0, 5.0, 2.0], [10.0, 5.0, 4.0]])
    offset, scale = input_scaling(x, "bernoulli")
    np.testing.assert_allclose((x - offset) / scale, x / 10)
    offset, scale = input_scaling(x, "gaussian")
    np.testing.assert_allclose((x - offset) / scale, [[-1, 0, -1], [1, 0, 1]])  # the constant feature keeps scale 1
    offset, scale = input_scaling(x, "gaussian", "none")
    assert not offset.any() and (scale == 1).all()


@pytest.mark.slow
def test_pickle_round_trip_without_the_optimizer_state():
    import pickle

    x, _ = toy_data(100)
    small = DCGMMClustering(2, **PAPER_TINY).fit(x)  # the paper's network: the weights, not the configs, weigh
    kept = DCGMMClustering(2, keep_optimizer=True, **PAPER_TINY).fit(x)
    data = pickle.dumps(small)
    assert len(data) < 0.5 * len(pickle.dumps(kept)) and kept.model_.optimizer is not None
    loaded = pickle.loads(data)
    np.testing.assert_allclose(loaded.predict_proba(x), small.predict_proba(x), atol=1e-6)
    np.testing.assert_array_equal(loaded.labels_, small.labels_)


def test_the_schedule_fits_the_data_size():
    from dcgmm_tf.sizing import fit_schedule

    large = fit_schedule(60000)
    assert (large.batch_size, large.epochs, large.pretrain_epochs, large.restart_every, large.lr_decay_epochs) == (
        256,
        100,
        10,
        10,
        20,
    )  # the runner's older recipe (docs/findings.md)
    wine = fit_schedule(178)
    assert wine.batch_size == 32 and wine.epochs * 6 >= 3000 and wine.pretrain_epochs * 6 >= 600
    assert fit_schedule(178, epochs=7, batch_size=64).epochs == 7
    assert (large.pair_tuning_epochs, large.choice_tuning_epochs) == (0, 0)  # none unless asked for
    digits = fit_schedule(1797, pair_tuning_epochs="auto", choice_tuning_epochs="auto")
    assert (digits.pair_tuning_epochs, digits.choice_tuning_epochs) == (80, 80)  # digits: 15 steps an epoch
    assert fit_schedule(60000, pair_tuning_epochs="auto").pair_tuning_epochs == 6
    with pytest.raises(ValueError, match="choice_tuning_epochs"):
        fit_schedule(178, choice_tuning_epochs=-1)
    with pytest.raises(ValueError, match="epochs must be 'auto' or an integer"):
        fit_schedule(178, epochs="many")


@pytest.mark.slow
def test_no_collapse_on_a_small_table_without_pairs():
    """Standardised wine (178 x 13) without pairs, the defaults: every cluster used, k-means' ARI (once: ARI 0.000, one
    cluster). Ten seeds: mean ARI 0.926 against k-means' 0.899 (studies/README.md)."""
    from sklearn.cluster import KMeans
    from sklearn.datasets import load_wine
    from sklearn.metrics import adjusted_rand_score
    from sklearn.preprocessing import StandardScaler

    x, y = load_wine(return_X_y=True)
    x = StandardScaler().fit_transform(x)
    est = DCGMMClustering(3, random_state=0).fit(x)
    assert np.bincount(est.labels_, minlength=3).min() > 0
    kmeans = adjusted_rand_score(y, KMeans(3, n_init=10, random_state=0).fit_predict(x))
    assert adjusted_rand_score(y, est.labels_) >= kmeans - 0.02  # 0.949 against 0.897 on a 2-core AVX-512 CPU


def test_a_fit_stops_once_its_clusters_hold_still():
    """``tol`` ends each start's fit after ``n_iter_no_change`` epochs in which at most that share of the samples
    changed cluster (``history_`` holds the epochs run); None trains every epoch."""
    x, y = toy_data(200)
    params = {**TINY, "epochs": 30, "pretrain_epochs": 10, "input_start": False, "input_fallback": False}
    stopped = DCGMMClustering(2, tol=1e-3, n_iter_no_change=3, **params).fit(x, ml=[(0, 1)])
    full = DCGMMClustering(2, tol=None, **params).fit(x, ml=[(0, 1)])
    assert 4 <= len(stopped.history_["loss"]) < 30 and len(full.history_["loss"]) == 30
    assert adjusted_rand_score(y, stopped.labels_) == adjusted_rand_score(y, full.labels_) == 1.0


def test_one_cluster_is_the_trivial_clustering():
    x, _ = toy_data(60)
    est = DCGMMClustering(1, **TINY).fit(x, ml=[(0, 1)])
    assert (est.labels_ == 0).all() and est.predict_proba(x).shape == (60, 1)


@pytest.mark.slow
def test_n_clusters_auto_chooses_from_the_pairs_then_by_probes():
    x, y = toy_data(200)
    constraints = ConstraintSet.from_labels(y, 100, seed=0)
    auto = DCGMMClustering("auto", cluster_range=(2, 3), probe_epochs="auto", **PRETRAINED).fit(
        x, constraints=constraints
    )
    count = auto.cluster_count_
    assert count.candidates == (2, 3) and len(count.scores) == 2  # the embedding's choice, every candidate scored
    assert count.criterion == "probes" and count.probed == (2, 3) and np.isfinite(count.probe_scores).all()
    assert auto.n_clusters_ in count.probed
    explicit = DCGMMClustering(auto.n_clusters_, **PRETRAINED).fit(x, constraints=constraints)
    np.testing.assert_allclose(auto.predict_proba(x), explicit.predict_proba(x), atol=1e-5)  # trained alike at K
    single = DCGMMClustering("auto", cluster_range=(2, 2), **TINY).fit(x, constraints=constraints)
    assert single.n_clusters_ == 2 and single.cluster_count_.criterion == "pairs"  # no probes by default
    assert single.cluster_count_.probed == ()
    for bounds, match in [
        ((1, 4), "integers in \\[2, 200\\]"),
        ((5, 2), "cluster_range must be"),
        (3, "must be"),
        (("a", 3), "must be"),
    ]:
        with pytest.raises(ValueError, match=match):
            DCGMMClustering("auto", cluster_range=bounds, **TINY).fit(x)
    with pytest.raises(InvalidParameterError, match="'probe_epochs' parameter"):
        DCGMMClustering(2, probe_epochs=-1, **TINY).fit(x)


def test_n_clusters_auto_chooses_on_folds_tuned_with_their_answers(monkeypatch):
    from dcgmm_tf import recipe

    x, y = toy_data(120)
    constraints = ConstraintSet.from_labels(y, 60, seed=0)
    tuned = []
    tune_with_pairs = recipe.tune_with_pairs

    def counting(model, x, pairs, epochs, *args, **kwargs):
        tuned.append((len(pairs), epochs))
        return tune_with_pairs(model, x, pairs, epochs, *args, **kwargs)

    monkeypatch.setattr(recipe, "tune_with_pairs", counting)
    chosen = []  # the estimator chooses K by the runner's function
    choose_clusters = recipe.choose_clusters
    monkeypatch.setattr(
        recipe, "choose_clusters", lambda *a, **k: chosen.append(choose_clusters(*a, **k)) or chosen[-1]
    )
    assert DCGMMClustering().choice_tuning_epochs == "auto" and DCGMMClustering().pair_tuning_epochs == 0
    auto = DCGMMClustering("auto", cluster_range=(2, 3), **{**TINY, "choice_tuning_epochs": 1}).fit(
        x, constraints=constraints
    )
    assert chosen == [auto.cluster_count_] and auto.cluster_count_.candidates == (2, 3)
    assert auto.schedule_.choice_tuning_epochs == 1 and auto.schedule_.pair_tuning_epochs == 0
    assert [epochs for _, epochs in tuned] == [1] * 4  # the four folds' copies, not the trained model
    assert all(40 <= size <= 50 for size, _ in tuned)  # each with about three quarters of the 60 answers
    tuned.clear()
    fixed = DCGMMClustering(2, **{**TINY, "choice_tuning_epochs": 1}).fit(x, constraints=constraints)
    assert fixed.schedule_.choice_tuning_epochs == 0 and tuned == []  # only to choose K


@pytest.mark.slow
def test_random_state_fixes_the_fit_with_any_network():
    """Networks other than the paper's are made under the fit's seeds too (they once drew the caller's)."""
    x, _ = toy_data(100)
    first = DCGMMClustering(2, **PRETRAINED).fit(x).predict_proba(x)
    np.random.seed(1), random.seed(1)
    np.testing.assert_array_equal(DCGMMClustering(2, **PRETRAINED).fit(x).predict_proba(x), first)


def test_a_cluster_left_empty_is_named_in_a_warning(monkeypatch):
    x, y = toy_data(60)

    def two_of_three(self, x):  # the fitted model's posteriors, with cluster 2 never the most probable
        p = np.full((len(x), 3), 0.1)
        p[np.arange(len(x)), np.arange(len(x)) % 2] = 0.8
        return p

    from dcgmm_tf.model import DCGMM

    monkeypatch.setattr(DCGMM, "cluster_probabilities", two_of_three)
    with pytest.warns(UserWarning, match=r"clusters \[2\] of 3 hold no training sample"):
        est = DCGMMClustering(3, input_fallback=False, **TINY).fit(x)
    assert sorted(set(est.labels_)) == [0, 1]


def test_the_kept_fit_is_the_start_of_lower_negative_elbo():
    x, y = toy_data(120)
    ml = [(i, j) for i, j in zip(np.flatnonzero(y == 0)[:5], np.flatnonzero(y == 0)[5:10])]
    both = DCGMMClustering(2, **TINY).fit(x, ml=ml)
    assert set(both.fit_losses_) == {"embedding", "input"}
    assert np.isfinite(list(both.fit_losses_.values())).all()
    assert both.fit_losses_[both.start_] == min(both.fit_losses_.values())
    with pytest.raises(InvalidParameterError, match="'input_start' parameter .* 'bool'"):
        DCGMMClustering(2, **TINY, input_start="yes").fit(x, ml=ml)
    one = DCGMMClustering(2, **TINY, input_start=False).fit(x, ml=ml)
    assert one.start_ == "embedding" and one.fit_losses_ == {}
    # The first fit is the one of input_start=False: same seed, same autoencoder, same start.
    np.testing.assert_array_equal(both.start_labels_["embedding"], one.start_labels_["embedding"])


def test_the_model_holds_the_kept_start_whichever_trained_last(monkeypatch):
    """The starts train one after the other in one model (the second in the step compiled for the first); where
    the first start's fit is kept, the model is put back to it: its weights and optimizer state are those of the
    fit from that start alone."""
    from dcgmm_tf import deep_fit
    from dcgmm_tf.deep_fit import DeepFit

    x, y = toy_data(120)
    ml = [(i, j) for i, j in zip(np.flatnonzero(y == 0)[:5], np.flatnonzero(y == 0)[5:10])]
    settings = {**TINY, "keep_optimizer": True, "input_fallback": False}
    alone = DCGMMClustering(2, **settings, input_start=False).fit(x, ml=ml)
    scores = iter([0.0, 1.0])  # the first start's fit scores lower
    monkeypatch.setattr(deep_fit.recipe, "fit_loss", lambda *args, **kwargs: next(scores))
    trained = []
    train = DeepFit.train

    def recorded_train(self, model, pairs, schedule, strategy, reuse_step=False):
        history = train(self, model, pairs, schedule, strategy, reuse_step)
        trained.append((reuse_step, model.get_weights()))
        return history

    monkeypatch.setattr(DeepFit, "train", recorded_train)
    both = DCGMMClustering(2, **settings, input_start=True).fit(x, ml=ml)
    assert both.start_ == "embedding" and [reused for reused, _ in trained] == [False, True]
    assert weights_equal(both.model_.get_weights(), alone.model_.get_weights())
    optimizer = [v.numpy() for v in both.model_.optimizer.variables]
    assert weights_equal(optimizer, [v.numpy() for v in alone.model_.optimizer.variables])
    np.testing.assert_array_equal(both.labels_, alone.labels_)
    assert not weights_equal(trained[1][1], trained[0][1])  # the second start trained elsewhere


@pytest.mark.filterwarnings("ignore:a Gaussian mixture of the input:UserWarning")  # either choice is right at first
def test_the_input_mixture_gives_the_labels_where_it_scores_higher(monkeypatch):
    from sklearn.metrics import adjusted_rand_score

    from dcgmm_tf.model import DCGMM

    x, y = toy_data(120)
    ml = [(i, j) for i, j in zip(np.flatnonzero(y == 0)[:5], np.flatnonzero(y == 0)[5:10])]
    gaussian = {**TINY, "likelihood": "gaussian"}
    # the pairs that choose the input GMM's covariance: the user's, not those spread to neighbours
    answers = recorded_keyword(monkeypatch, starts, "input_gmm", "constraints")
    est = DCGMMClustering(2, **gaussian, spread_neighbours=2).fit(x, ml=ml)
    assert len(answers) == 1 and sorted(zip(answers[0].i, answers[0].j)) == sorted(ml)
    assert set(est.mixture_scores_) == {"deep", "input"}
    assert est.mixture_scores_[est.chosen_] == max(est.mixture_scores_.values())
    # The score weighs the pairs (those trained on, spread ones included) at pair_scale of their weight.
    xs, kind, pairs = est._scaled(x), est.input_mixture_.covariance_type, est.constraints_
    assert len(pairs) > len(ml)
    scored = ConstraintSet(pairs.i, pairs.j, pairs.weight * pair_scale(len(pairs), len(x)), len(x))
    deep_labels = est.start_labels_[est.start_]
    deep = paired_mixture.mixture_of_clusters(xs, scored, deep_labels, 2, kind)
    assert est.mixture_scores_["deep"] == deep.objective
    assert est.mixture_scores_["deep"] != paired_mixture.mixture_of_clusters(xs, pairs, deep_labels, 2, kind).objective
    with pytest.raises(InvalidParameterError, match="'input_fallback' parameter .* 'bool'"):
        DCGMMClustering(2, **gaussian, input_fallback=1).fit(x)
    for off in (
        DCGMMClustering(2, input_fallback=False, **gaussian),
        DCGMMClustering(2, **TINY, likelihood="bernoulli"),
    ):
        off.fit(x, ml=ml)
        assert off.chosen_ == "deep" and off.input_mixture_ is None and off.mixture_scores_ == {}
        np.testing.assert_array_equal(off.labels_, off.model_.cluster_probabilities(off._scaled(x)).argmax(-1))

    def coin_tosses(self, x):  # a deep model whose clusters ignore the data
        return np.eye(2, dtype=np.float32)[np.random.default_rng(99).integers(0, 2, len(x))]  # not toy_data's draw

    monkeypatch.setattr(DCGMM, "cluster_probabilities", coin_tosses)
    with pytest.warns(UserWarning, match="a Gaussian mixture of the input explains the data and pairs better"):
        est = DCGMMClustering(2, **gaussian).fit(x, ml=ml)
    assert est.chosen_ == "input" and est.mixture_scores_["input"] > est.mixture_scores_["deep"]
    np.testing.assert_array_equal(est.labels_, est.input_mixture_.probabilities.argmax(-1))
    np.testing.assert_array_equal(est.predict(x), est.input_mixture_.predict_proba(est._scaled(x)).argmax(-1))
    assert adjusted_rand_score(y, est.labels_) > 0.9
    # the input mixture's posteriors follow the pairs at their own weight, not the score's
    np.testing.assert_array_equal(est.labels_[[i for i, _ in ml]], est.labels_[[j for _, j in ml]])
    assert est.input_mixture_.objective != est.mixture_scores_["input"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["iris", "wine"])
def test_an_affine_map_of_a_benchmark_set_gives_the_same_clustering(name):
    from sklearn import datasets
    from sklearn.metrics import adjusted_rand_score
    from sklearn.preprocessing import StandardScaler

    x, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    x = StandardScaler().fit_transform(x)  # as the benchmark of studies/ loads it
    params = {**TINY, "epochs": 5, "pretrain_epochs": 3, "latent_dim": 5}
    reference = DCGMMClustering(len(np.unique(y)), **params).fit(x)
    # float32 keeps about 7 digits: with a = 1e-3 and |b| = 1e3 the rounding of a * X + b itself would blur the
    # data (steps of 6e-5 against a spread of 1e-3), so that map is checked in float64 only.
    maps = [
        (1e-3, 0.0, np.float64),
        (1e-3, -1e3, np.float64),
        (1e3, 1e3, np.float64),
        (1e-3, 0.0, np.float32),
        (1e3, 1e3, np.float32),
    ]
    for a, b, dtype in maps:
        est = DCGMMClustering(len(np.unique(y)), **params).fit((a * x + b).astype(dtype))
        assert adjusted_rand_score(reference.labels_, est.labels_) >= 0.98, (a, b, dtype)


def test_the_fallback_weighs_the_pairs_by_the_pairs_per_sample():
    assert pair_scale(100, 1000) == pytest.approx(PAIR_RATE / 10)
    assert pair_scale(500, 1000) == pytest.approx(5 * pair_scale(100, 1000))
    assert pair_scale(0, 10) == 0.0 and pair_scale(10**9, 10) == 1.0  # at most the full weight
    assert pair_scale(100, 1000, rate=0.5) == pytest.approx(0.05)
    for bad in ((-1, 10), (5, 0), (5, 10, -1.0), (5, 10, float("nan"))):
        with pytest.raises(ValueError, match="num_pairs >= 0, num_samples >= 1 and rate >= 0"):
            pair_scale(*bad)


def test_the_sizing_rules_are_functions_of_the_data_alone():
    from dcgmm_tf import sizing

    assert sizing.cluster_candidates(3, (2, 30), 10) == () and sizing.cluster_candidates("auto", (2, 4), 10) == (
        2,
        3,
        4,
    )
    with pytest.raises(ValueError, match=r"n_clusters must be .auto. or an integer in \[1, n_samples=10\]"):
        sizing.cluster_candidates(11, (2, 30), 10)
    assert sizing.hidden_units_for("auto", 50) == (64, 64) and sizing.hidden_units_for("auto", 51) == (500, 500, 2000)
    assert sizing.hidden_units_for([8, 4], 3) == (8, 4)
    assert sizing.likelihood_for("gaussian", None) == "gaussian" and sizing.likelihood_for("bernoulli", None) == (
        "bernoulli"
    )
    wine = sizing.fit_schedule(178, pair_tuning_epochs=3)  # 500 epochs of 6 steps
    probe = sizing.probe_schedule(wine, 178, "auto")  # a fifth of the run, tuned as the fit is
    assert (probe.epochs, probe.restart_every, probe.lr_decay_epochs, probe.pair_tuning_epochs) == (100, 10, 20, 3)
    assert sizing.probe_schedule(wine, 178, 7).epochs == 7


def test_the_fallback_keeps_the_deep_model_where_it_has_no_rival():
    from dcgmm_tf.fallback import choose_labels

    labels = np.array([0, 1, 1])
    kept = choose_labels(np.zeros((3, 2)), ConstraintSet.empty(3), labels, None, None)
    assert (kept.chosen, kept.scores, kept.mixture) == ("deep", {}, None) and kept.labels is labels


TOY_FIT = """
import numpy as np
from dcgmm_tf.estimator import DCGMMClustering
from tests.helpers import TINY, toy_data

x, y = toy_data(200)
ml = [(i, j) for i, j in zip(np.flatnonzero(y == 0)[:20], np.flatnonzero(y == 0)[20:40])]
"""


def console_of(script: str) -> str:
    """What ``script`` prints, run in a process of its own from the repository root (TensorFlow's retracing warning
    counts the traces of the whole process); the script must succeed."""
    import subprocess
    import sys
    from pathlib import Path

    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=Path(__file__).parents[1], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


@pytest.mark.slow
def test_three_fits_in_one_process_print_no_retracing_warning():
    """Each fit makes new models, and TensorFlow counts their predict functions' first traces together: without the
    library holding that warning back, the third fit of a process prints it."""
    fits = """
for seed in range(3):
    DCGMMClustering(2, **{**TINY, "pretrain_epochs": 1, "random_state": seed}).fit(x, ml=ml).predict(x)
"""
    assert "retracing" not in console_of(TOY_FIT + fits)


@pytest.mark.slow
def test_predicting_inputs_of_new_sizes_retraces_nothing():
    """A fitted estimator's predict, predict_proba and transform on ten input sizes print no tf.function retracing
    warning."""
    sizes = """
est = DCGMMClustering(2, **{**TINY, "pretrain_epochs": 1}).fit(x, ml=ml)
for n in (7, 13, 29, 50, 101, 3, 11, 17, 1, 200):
    est.predict(x[:n]), est.predict_proba(x[:n]), est.transform(x[:n])
"""
    assert "retracing" not in console_of(TOY_FIT + sizes)
