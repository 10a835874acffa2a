"""Starts of the mixture (dcgmm_tf.starts) on hand-made embeddings and constraints."""

import warnings

import numpy as np
import pytest
from sklearn.mixture import GaussianMixture

from dcgmm_tf import DCGMM, ConstraintSet, MLPDecoder, MLPEncoder, default_alpha, metrics
from dcgmm_tf import starts as start_module
from dcgmm_tf.config import LATENT_CLASS_STARTS
from dcgmm_tf.constraints import flip_probability
from dcgmm_tf.starts import (
    cluster_start,
    fit_latent_classes,
    gmm_start,
    init_clusters,
    kmeans_start,
    latent_class_start,
    link_metric,
    merge_start,
    moment_match,
)
from tests.helpers import recorded_em_starts, recorded_keyword

# Six tight blobs on a line; classes pair blobs that are NOT neighbours, so the geometry alone (a GMM with K = 3)
# groups them wrongly and only the links can tell which blobs belong together.
BLOB_X = np.array([0.0, 2.0, 1.0, 4.0, 3.0, 5.0])
BLOB_CLASS = np.array([0, 0, 1, 1, 2, 2])


def blobs(per_blob=40, seed=0):
    rng = np.random.default_rng(seed)
    blob = np.repeat(np.arange(6), per_blob)
    z = np.stack([BLOB_X[blob], np.zeros(len(blob))], axis=1) + rng.normal(0, 0.05, (len(blob), 2))
    return z, BLOB_CLASS[blob]


def links(y, num_pairs=300, link_type="both", seed=0):
    return ConstraintSet.from_labels(y, num_pairs, link_type=link_type, seed=seed)


def tiny_model(input_dim):
    """A DC-GMM with K = 3, D = 2 and one hidden layer of 16 units each way, on inputs of ``input_dim``."""
    return DCGMM(
        (input_dim,),
        num_clusters=3,
        latent_dim=2,
        seed=0,
        encoder=MLPEncoder(2, hidden_units=(16,), name="encoder"),
        decoder=MLPDecoder(input_dim, hidden_units=(16,), name="decoder"),
    )


def latent_class_on_embeddings(*args, **kwargs):
    """latent_class_start without the link metric: the grouping alone."""
    return latent_class_start(*args, metric=False, **kwargs)


STARTS = [merge_start, latent_class_on_embeddings]


@pytest.mark.parametrize("start", STARTS)
@pytest.mark.parametrize("link_type", ["both", "must", "cannot"])
def test_linked_blobs_end_together_and_separated_blobs_stay_apart(start, link_type):
    z, y = blobs()
    result = start(z, links(y, link_type=link_type), 3, num_components=6, seed=0)
    assert metrics.cluster_accuracy(y, result.assignments) == 1.0
    assert result.means.shape == result.variances.shape == (3, 2)
    # Each start's Gaussian sits between its two blobs.
    np.testing.assert_allclose(np.sort(result.means[:, 0]), [1.0, 2.5, 4.0], atol=0.05)


def test_the_paper_gmm_groups_neighbours_instead():
    z, y = blobs()
    assert metrics.cluster_accuracy(y, gmm_start(z, 3, seed=0).assignments) < 0.8


@pytest.mark.parametrize("strategy", ["merge", "latent_class"])
def test_starts_are_deterministic_given_the_seed(strategy):
    z, y = blobs(seed=1)
    z = z + np.random.default_rng(2).normal(0, 0.5, z.shape)  # overlapping blobs: the seed matters
    constraints = links(y, 100)
    first = cluster_start(z, constraints, 3, strategy, num_components=12, seed=3)
    again = cluster_start(z, constraints, 3, strategy, num_components=12, seed=3)
    np.testing.assert_array_equal(first.assignments, again.assignments)
    np.testing.assert_array_equal(first.means, again.means)


@pytest.mark.parametrize("strategy", ["gmm", "merge", "latent_class"])
def test_without_constraints_every_strategy_is_the_paper_gmm(strategy):
    z, y = blobs()
    expected = gmm_start(z, 3, seed=0)
    for constraints in (None, ConstraintSet.empty(len(z))):
        result = cluster_start(z, constraints, 3, strategy, num_components=6, seed=0)
        np.testing.assert_array_equal(result.means, expected.means)
        np.testing.assert_array_equal(result.assignments, expected.assignments)


def test_kmeans_start_is_scikit_learns_kmeans_moment_matched_with_or_without_pairs(monkeypatch):
    from sklearn.cluster import KMeans

    z, y = blobs(seed=2)
    expected = KMeans(6, n_init=10, random_state=4).fit_predict(z)
    means, variances = moment_match(z, expected, 6, min_variance=0.01)
    for constraints in (None, links(y)):
        start = cluster_start(z, constraints, 6, "kmeans", seed=4, min_variance=0.01)
        np.testing.assert_array_equal(start.assignments, expected)
        np.testing.assert_allclose(start.means, means)
        np.testing.assert_allclose(start.variances, variances)
    blob = np.round(z[:, 0]).astype(int)
    assert metrics.cluster_accuracy(blob, start.assignments) == 1.0 and start.variances.min() == 0.01
    monkeypatch.setattr(start_module, "FIT_SAMPLES", 60)  # k-means on 60 of the 240 rows, every row assigned
    monkeypatch.setattr(start_module, "CHUNK", 100)
    subset = kmeans_start(z, 6, seed=4)
    assert len(subset.assignments) == 240 and metrics.cluster_accuracy(blob, subset.assignments) == 1.0


@pytest.mark.parametrize("start", STARTS)
@pytest.mark.parametrize(
    "num_components, message", [(2, r"num_components \(K'\) must be in \[K=3"), (241, r"must be in \[K=3, N=240\]")]
)
def test_bad_number_of_components_is_rejected(start, num_components, message):
    z, y = blobs()
    with pytest.raises(ValueError, match=message):
        start(z, links(y), 3, num_components=num_components)


def test_bad_embeddings_and_constraints_are_rejected():
    z, y = blobs()
    with pytest.raises(ValueError, match="finite"):
        gmm_start(np.full_like(z, np.nan), 3)
    with pytest.raises(ValueError, match="num_clusters"):
        gmm_start(z, 0)
    with pytest.raises(ValueError, match="index 100 samples but there are 240"):
        merge_start(z, ConstraintSet([0], [1], [1.0], 100), 3, num_components=6)
    with pytest.raises(ValueError, match="strategy must be one of"):
        cluster_start(z, None, 3, "spectral")


def test_latent_classes_recover_noisy_links():
    """EM on pairs of 12 components (4 classes x 3) with 20 % of the links flipped finds the classes."""
    rng = np.random.default_rng(0)
    component_class = np.repeat(np.arange(4), 3)
    a, b = rng.integers(0, 12, 3000), rng.integers(0, 12, 3000)
    must = (component_class[a] == component_class[b]) ^ (rng.random(3000) < 0.2)
    log_p, log_lik = fit_latent_classes(a, b, must, np.full(3000, 0.2), np.full(12, 1000.0), 4, seed=0)
    assert log_p.shape == (12, 4) and np.isfinite(log_lik)
    np.testing.assert_allclose(np.exp(log_p).sum(axis=1), 1.0)
    assert metrics.cluster_accuracy(component_class, log_p.argmax(axis=1)) == 1.0
    assert np.exp(log_p).max(axis=1).min() > 0.9


def test_link_metric_whitens_must_links_and_stretches_what_cannot_links_separate():
    """Classes differ along axis 0 (spacing 1); axis 1 is wide nuisance noise. The map makes axis 0 dominant."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 3000)
    z = np.stack([y + rng.normal(0, 0.1, 3000), rng.normal(0, 3.0, 3000)], axis=1)
    constraints = links(y, 2000)
    m = link_metric(z, constraints)
    must, cannot = constraints.must_link_mask, constraints.cannot_link_mask
    d_must = (z[constraints.i[must]] - z[constraints.j[must]]) @ m
    d_cannot = (z[constraints.i[cannot]] - z[constraints.j[cannot]]) @ m
    # With m = V sqrt(L), V^T A V = I and V^T B V = L: must-link moments become L, cannot-link moments L^2.
    lam = np.diag(d_must.T @ d_must / len(d_must))
    np.testing.assert_allclose(d_must.T @ d_must / len(d_must), np.diag(lam), atol=1e-6 * lam.max())
    np.testing.assert_allclose(
        d_cannot.T @ d_cannot / len(d_cannot), np.diag(lam**2), rtol=1e-6, atol=1e-6 * lam.max() ** 2
    )
    assert lam.max() > 50 * lam.min()
    assert metrics.cluster_accuracy(y, gmm_start(z @ m, 3, seed=0).assignments) > 0.95
    assert metrics.cluster_accuracy(y, gmm_start(z, 3, seed=0).assignments) < 0.7


def test_link_metric_without_one_link_type_uses_random_pairs():
    z, y = blobs()
    for link_type in ("must", "cannot"):
        m = link_metric(z, links(y, 300, link_type=link_type))
        assert m.shape == (2, 2) and np.all(np.isfinite(m))


def test_moment_match_matches_numpy():
    z, y = blobs()
    means, variances = moment_match(z, y, 4, min_variance=1e-3)
    for k in range(3):
        np.testing.assert_allclose(means[k], z[y == k].mean(axis=0))
        np.testing.assert_allclose(variances[k], np.maximum(z[y == k].var(axis=0), 1e-3))
    np.testing.assert_allclose(means[3], z.mean(axis=0))  # an empty cluster takes the global statistics


def test_flip_probability_inverts_the_papers_confidence():
    for q in (0.1, 0.2, 0.3):
        np.testing.assert_allclose(flip_probability(default_alpha(q)), q, rtol=1e-9)
    assert 0 < flip_probability(1e4) < 1e-4
    assert flip_probability(-2000.0) == flip_probability(2000.0)


def test_latent_class_restart_from_the_current_clusters_keeps_their_numbering():
    z, y = blobs()
    current = np.eye(3)[(y + 1) % 3]  # the right grouping under other cluster numbers
    result = latent_class_start(z, links(y), 3, num_components=6, seed=0, metric=False, current=current)
    np.testing.assert_array_equal(result.assignments, (y + 1) % 3)
    with pytest.raises(ValueError, match=r"current must hold cluster probabilities of shape \(240, 3\)"):
        latent_class_start(z, links(y), 3, num_components=6, current=current[:10])


def test_init_clusters_sets_the_models_mixture():
    x = np.random.default_rng(0).random((120, 8)).astype(np.float32)
    model = tiny_model(8)
    y = np.arange(120) % 3
    start = init_clusters(model, x, links(y, 60), "latent_class", num_components=6, seed=0)
    np.testing.assert_allclose(model.cluster_means.numpy(), start.means, rtol=1e-5)
    np.testing.assert_allclose(model.cluster_variances.numpy(), start.variances, rtol=1e-4)
    assert start.assignments.shape == (120,)


def test_cluster_restart_regroups_the_mixture_every_n_epochs_and_after_the_last():
    import keras

    from dcgmm_tf.callbacks import ClusterRestart
    from dcgmm_tf.data import constrained_dataset

    rng = np.random.default_rng(0)
    y = np.arange(240) % 3
    x = np.clip(0.2 + 0.3 * np.eye(3)[y].repeat(4, axis=1) + rng.normal(0, 0.05, (240, 12)), 0, 1).astype(np.float32)
    constraints = links(y, 100)
    model = tiny_model(12)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    restarted = []

    class Check(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            expected = cluster_start(
                model.embed(x), constraints, 3, "merge", 6, seed=7 + epoch + 1, min_variance=2 * model.min_variance
            )
            restarted.append(np.allclose(model.cluster_means.numpy(), expected.means, rtol=1e-5, atol=1e-6))

    model.fit(
        constrained_dataset(x, constraints, batch_size=64, seed=0),
        epochs=5,
        verbose=0,
        shuffle=False,
        callbacks=[ClusterRestart(x, constraints, every=2, strategy="merge", num_components=6, seed=7), Check()],
    )
    assert restarted == [False, True, False, True, True]  # after epochs 2 and 4, and after the last
    with pytest.raises(ValueError, match="every must be >= 1"):
        ClusterRestart(x, constraints, every=0)


def test_the_ems_random_starts_reach_the_start_and_every_restart(monkeypatch):
    import keras

    from dcgmm_tf.callbacks import ClusterRestart
    from dcgmm_tf.data import constrained_dataset
    from dcgmm_tf.pretraining import start_mixture

    starts = recorded_em_starts(monkeypatch)
    x = np.random.default_rng(0).random((120, 8)).astype(np.float32)
    constraints = links(np.arange(120) % 3, 60)
    model = tiny_model(8)
    start_mixture(model, x, "latent_class", constraints, num_components=6)
    start_mixture(model, x, "latent_class", constraints, num_components=6, em_starts=5)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    restart = ClusterRestart(x, constraints, every=1, num_components=6, em_starts=2)
    model.fit(constrained_dataset(x, constraints, batch_size=60, seed=0), epochs=2, verbose=0, callbacks=[restart])
    assert starts == [LATENT_CLASS_STARTS, 5, 2, 2] and LATENT_CLASS_STARTS == 3


def test_cluster_restart_rejects_an_unknown_strategy():
    from dcgmm_tf.callbacks import ClusterRestart

    with pytest.raises(ValueError, match="strategy must be one of"):
        ClusterRestart(np.zeros((4, 2)), None, every=1, strategy="spectral")


def test_large_data_fits_the_over_clustering_on_a_subset_and_assigns_in_chunks(monkeypatch):
    from sklearn.mixture import GaussianMixture

    z, y = blobs(per_blob=50)
    current = np.eye(3)[(y + 1) % 3]
    whole = latent_class_on_embeddings(z, links(y), 3, num_components=6, seed=0, current=current)
    fitted_rows = []
    fit = GaussianMixture.fit
    monkeypatch.setattr(GaussianMixture, "fit", lambda self, x, y=None: fitted_rows.append(len(x)) or fit(self, x))
    monkeypatch.setattr(start_module, "CHUNK", 37)  # 300 rows: 9 chunks, the last of 4
    chunked = latent_class_on_embeddings(z, links(y), 3, num_components=6, seed=0, current=current)
    np.testing.assert_array_equal(chunked.assignments, whole.assignments)
    np.testing.assert_allclose(chunked.means, whole.means)
    monkeypatch.setattr(start_module, "FIT_SAMPLES", 120)
    subset = latent_class_on_embeddings(z, links(y), 3, num_components=6, seed=0, current=current)
    assert fitted_rows == [300, 120]  # the GMM saw 120 of the 300 rows; every row is still assigned
    assert len(subset.assignments) == 300 and metrics.cluster_accuracy(y, subset.assignments) == 1.0


def _latent_classes_per_pair(a, b, must, flip, sizes, k, seed, n_init, smoothing=0.1, max_iter=300, tol=1e-7):
    """The latent class EM written pair by pair, with scipy's logsumexp, one start after the other."""
    from scipy import sparse
    from scipy.special import logsumexp

    rng = np.random.default_rng(seed)
    log_same = np.where(must, np.log1p(-flip), np.log(flip))[:, None]
    log_diff = np.where(must, np.log(flip), np.log1p(-flip))[:, None]
    n = np.arange(len(a))
    ends = sparse.csr_matrix(
        (np.ones(2 * len(a)), (np.concatenate([a, b]), np.concatenate([n, n + len(a)]))), shape=(len(sizes), 2 * len(a))
    )
    free = np.maximum(sizes - np.asarray(ends.sum(axis=1)).ravel(), 0.0)[:, None]
    total = free.sum() + 2 * len(a)
    best, best_lik = None, -np.inf
    for start in [rng.dirichlet(np.ones(k), len(sizes)) * sizes[:, None] for _ in range(n_init)]:
        counts, previous = smoothing + start, -np.inf
        for _ in range(max_iter):
            log_theta = np.log(counts) - np.log(counts.sum(axis=0, keepdims=True))
            others = logsumexp(np.where(np.eye(k, dtype=bool), -np.inf, log_theta[:, None, :]), axis=2)
            end_a = log_theta[a] + np.logaddexp(log_same + log_theta[b], log_diff + others[b])
            end_b = log_theta[b] + np.logaddexp(log_same + log_theta[a], log_diff + others[a])
            log_pair = logsumexp(end_a, axis=1, keepdims=True)
            log_component = logsumexp(log_theta, axis=1, keepdims=True)
            posterior = np.exp(np.concatenate([end_a, end_b]) - np.concatenate([log_pair, log_pair]))
            counts = smoothing + ends @ posterior + free * np.exp(log_theta - log_component)
            lik = float((log_pair.sum() + (free * log_component).sum()) / total - np.log(k))
            if lik - previous < tol:
                break
            previous = lik
        if lik > best_lik + 1e-5:
            log_theta = np.log(counts) - np.log(counts.sum(axis=0, keepdims=True))
            best, best_lik = log_theta - logsumexp(log_theta, axis=1, keepdims=True), lik
    return best, best_lik


def test_latent_class_em_is_the_per_pair_em_bit_for_bit():
    # Many pairs share their components, link and flip probability (grouped in the EM), two confidences.
    rng = np.random.default_rng(3)
    classes = rng.integers(0, 3, 12)
    a, b = rng.integers(0, 12, 400), rng.integers(0, 12, 400)
    must = classes[a] == classes[b]
    flip = np.where(rng.random(400) < 0.5, 1e-3, 0.2)
    sizes = np.full(12, 100.0)
    log_p, log_lik = fit_latent_classes(a, b, must, flip, sizes, 3, seed=1, n_init=4)
    expected_p, expected_lik = _latent_classes_per_pair(a, b, must, flip, sizes, 3, seed=1, n_init=4)
    assert log_p.tobytes() == expected_p.tobytes() and log_lik == expected_lik


def test_latent_class_starts_side_by_side_or_one_after_the_other_agree(monkeypatch):
    """Threads pay only on many groups of pairs (PARALLEL_GROUPS); both ways give the same fit, bit for bit."""
    import dcgmm_tf.starts as start_module

    rng = np.random.default_rng(4)
    classes = rng.integers(0, 3, 12)
    a, b = rng.integers(0, 12, 400), rng.integers(0, 12, 400)
    args = (a, b, classes[a] == classes[b], np.full(400, 0.05), np.full(12, 100.0), 3)
    fits = []
    for threshold in (0, 10**9):  # side by side, then one after the other
        monkeypatch.setattr(start_module, "PARALLEL_GROUPS", threshold)
        fits.append(fit_latent_classes(*args, seed=2, n_init=6))
    assert fits[0][0].tobytes() == fits[1][0].tobytes() and fits[0][1] == fits[1][1]


@pytest.mark.parametrize("strategy", ["latent_class", "merge", "gmm", "kmeans"])
def test_the_start_embeds_the_data_once(strategy, monkeypatch):
    """The start's cost at large N is the encoder's passes over x: the GMM of the clusters that latent_class
    starts from and the start itself share one embedding."""
    from dcgmm_tf.pretraining import start_mixture
    from tests.helpers import small_model, toy_data

    x, y = toy_data(300)
    model = small_model()
    calls = []
    embed = model.embed
    monkeypatch.setattr(model, "embed", lambda data, **kwargs: calls.append(len(data)) or embed(data, **kwargs))
    start_mixture(model, x, strategy, ConstraintSet.from_labels(y, 60, seed=0), seed=0)
    assert calls == [300]


def test_certain_answers_have_a_zero_flip_probability_without_a_warning():
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(4), 3)  # 12 components, 3 per class
    a, b = rng.integers(0, 12, 600), rng.integers(0, 12, 600)
    must = truth[a] == truth[b]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        log_p, log_lik = fit_latent_classes(a, b, must, np.zeros(600), np.full(12, 100.0), 4, seed=0)
    assert np.isfinite(log_lik) and np.isfinite(log_p).all()
    found = log_p.argmax(axis=1)
    assert all(len(set(found[truth == c])) == 1 for c in range(4)) and len(set(found)) == 4


def test_input_gmm_finds_clusters_that_are_plain_in_the_input():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 40)
    x = rng.normal(size=(120, 3)) * 0.3 + 5.0 * np.eye(3)[y]
    gmm = start_module.input_gmm(x, 3, seed=0)
    assert metrics.ari(y, gmm.predict(x)) == pytest.approx(1.0)
    assert gmm.covariance_type in ("diag", "full")


def test_input_gmm_also_starts_from_the_features_original_spread():
    """Two clusters apart in a feature of large spread, ten noise features of small spread: standardised, the
    noise weighs as much as the signal, and EM from k-means on the standardised features misses the clusters. EM
    at the original spread finds them and competes by BIC, so the BIC of the GMM kept is never above that of the GMM
    without it; an equal spread changes nothing."""
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1], 60)
    raw = np.concatenate([10.0 * y[:, None] + rng.normal(0, 3.0, (120, 1)), rng.normal(0, 0.1, (120, 10))], axis=1)
    spread = raw.std(0)
    x = (raw - raw.mean(0)) / spread
    plain, both = start_module.input_gmm(x, 2, seed=0), start_module.input_gmm(x, 2, seed=0, spread=spread)
    assert both.bic(x) <= plain.bic(x)
    assert metrics.ari(y, plain.predict(x)) < 0.1 and metrics.ari(y, both.predict(x)) > 0.8
    same = start_module.input_gmm(x, 2, seed=0, spread=np.full(11, 2.0))
    np.testing.assert_array_equal(same.means_, plain.means_)


def _crossing_clusters() -> np.ndarray:
    """Two long clusters crossing at an angle: a full covariance separates them, a diagonal one cannot."""
    rng = np.random.default_rng(5)
    line = rng.normal(size=(150, 1)) * np.array([[4.0, 0.0]]) + rng.normal(size=(150, 2)) * 0.3
    turn = np.array([[np.cos(0.6), np.sin(0.6)], [-np.sin(0.6), np.cos(0.6)]])
    return np.concatenate([line[:75] @ turn, line[75:] @ turn.T])


def test_pair_agreement_sums_the_confidence_of_the_pairs_the_clusters_respect():
    x = _crossing_clusters()
    gmm = start_module.input_gmm(x, 2, seed=0)
    rng = np.random.default_rng(1)
    pairs = ConstraintSet(
        rng.integers(150, size=40), rng.integers(150, size=40), rng.choice([-2.0, -0.5, 1.0], 40), 150
    )
    expected = np.abs(pairs.weight[pairs.satisfied(gmm.predict(x))]).sum()
    assert start_module.pair_agreement(gmm, x, pairs) == pytest.approx(expected)
    assert 0 < start_module.pair_agreement(gmm, x, pairs) < np.abs(pairs.weight).sum()
    assert start_module.pair_agreement(gmm, x, ConstraintSet.empty(150)) == 0.0


def test_the_pairs_choose_the_input_gmms_covariance():
    """Answered from the clusters of either covariance type, the pairs get that type back; without pairs the BIC
    chooses."""
    x = _crossing_clusters()
    by_bic = start_module.input_gmm(x, 2, seed=0)
    for kind in ("diag", "full"):
        other = GaussianMixture(2, covariance_type=kind, n_init=start_module.INPUT_GMM_INITS, random_state=0).fit(x)
        clusters = other.predict(x)
        pairs = ConstraintSet.from_labels(clusters, 60, seed=0)
        chosen = start_module.input_gmm(x, 2, seed=0, constraints=pairs)
        assert chosen.covariance_type == kind
        assert metrics.ari(clusters, chosen.predict(x)) == pytest.approx(1.0)
    empty = start_module.input_gmm(x, 2, seed=0, constraints=ConstraintSet.empty(150))
    np.testing.assert_array_equal(empty.means_, by_bic.means_)


def test_full_covariances_are_tried_only_where_their_em_is_affordable(monkeypatch):
    x = np.random.default_rng(0).normal(size=(200, 12))
    assert start_module.input_gmm(x, 2, seed=0).covariance_type in ("diag", "full")
    monkeypatch.setattr(start_module, "FULL_COVARIANCE_COST", 12**2 * 200 - 1)
    fitted = recorded_keyword(monkeypatch, start_module, "GaussianMixture", "covariance_type")
    assert start_module.input_gmm(x, 2, seed=0).covariance_type == "diag"
    assert set(fitted) == {"diag"}


def test_the_input_gmms_covariance_floor_reaches_every_em_run(monkeypatch):
    """The floors are scikit-learn's reg_covar of every EM run, at the scaled features' and at their original spread:
    the choice floor (scikit-learn's own) in the fits that choose the type, the covariance floor in those returned,
    whose variances it bounds."""
    x, spread = _crossing_clusters(), np.array([1.0, 3.0])
    floors = recorded_keyword(monkeypatch, start_module, "GaussianMixture", "reg_covar")
    start_module.input_gmm(x, 2, seed=0, spread=spread)
    assert start_module.INPUT_GMM_CHOICE_FLOOR == GaussianMixture().reg_covar < start_module.INPUT_GMM_COVARIANCE_FLOOR
    # 2 types x (scaled, spread, carried) at each floor
    assert sorted(floors) == [GaussianMixture().reg_covar] * 6 + [start_module.INPUT_GMM_COVARIANCE_FLOOR] * 6
    floors.clear()
    wide = start_module.input_gmm(x, 2, seed=0, spread=spread, covariance_floor=100.0)
    assert set(floors) == {100.0, start_module.INPUT_GMM_CHOICE_FLOOR}
    kept = wide.covariances_
    assert (kept if wide.covariance_type == "diag" else np.diagonal(kept, axis1=1, axis2=2)).min() >= 100.0
    floors.clear()
    start_module.input_gmm(x, 2, seed=0, spread=spread, covariance_floor=1e-3, choice_floor=1e-3)
    assert floors == [1e-3] * 6  # one floor: each type fitted once


def test_the_bic_at_the_choice_floor_orders_the_types_fitted_at_the_covariance_floor():
    """At a floor of 3 the BIC prefers a diagonal GMM of the crossing clusters, at scikit-learn's floor a full one:
    the fits returned have the first's floor and the second's order."""
    x = _crossing_clusters()
    at_floor = start_module.input_gmm_fits(x, 2, seed=0, covariance_floor=3.0, choice_floor=3.0)
    assert [gmm.covariance_type for gmm in at_floor] == ["diag", "full"]
    fits = start_module.input_gmm_fits(x, 2, seed=0, covariance_floor=3.0, choice_floor=1e-6)
    assert [gmm.covariance_type for gmm in fits] == ["full", "diag"]
    full, diag = fits
    assert np.diagonal(full.covariances_, axis1=1, axis2=2).min() >= 3.0 and diag.covariances_.min() >= 3.0
    for fit, same in zip(fits, at_floor[::-1]):
        np.testing.assert_allclose(fit.means_, same.means_)


def test_the_input_gmm_runs_on_one_thread_on_small_data_only(monkeypatch):
    """EM on small data runs with one OpenMP and one BLAS thread, on larger data with the threads as they are (two
    here: the test processes start with one, conftest.py)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    threads = []
    fit = GaussianMixture.fit

    def recording_fit(self, x, y=None):
        threads.append({pool["num_threads"] for pool in threadpool_info()})
        return fit(self, x, y)

    monkeypatch.setattr(GaussianMixture, "fit", recording_fit)
    x = _crossing_clusters()  # 150 rows x 2 features
    for limit, expected in ((x.size, {1}), (x.size - 1, {2})):
        monkeypatch.setattr(start_module, "ONE_THREAD_ENTRIES", limit)
        threads.clear()
        with threadpool_limits(2):
            start_module.input_gmm(x, 2, seed=0)
            assert {pool["num_threads"] for pool in threadpool_info()} == {2}
        assert threads and all(used == expected for used in threads)
