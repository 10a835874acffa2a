"""The Table 1 baselines: PCKmeans, the DEC losses against NumPy, SDEC, C-IDEC and layer-wise pretraining."""

import keras
import numpy as np
import pytest
from scipy import sparse
from scipy.sparse import csgraph
from scipy.special import logsumexp

from dcgmm_tf import ConstraintSet, metrics
from dcgmm_tf.baselines import CIDEC, SDEC, ClusteringLayer, PCKMeans, StackedAutoencoder, dec, pretrain_layerwise
from dcgmm_tf.baselines.pckmeans import independent_sets, must_link_neighbourhoods


def numpy_of(tensor):
    return keras.ops.convert_to_numpy(tensor)


def stripes(n=300, seed=0):
    """Two horizontal stripes, 20 wide and 3 apart: k-means cuts them left/right, the labels are the stripes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(2, size=n)
    x = np.stack([rng.uniform(0, 20, n), 3.0 * y + rng.normal(0, 0.3, n)], 1).astype(np.float32)
    return x / 10, y


def random_log_q(rng, shape):
    logits = rng.normal(size=shape) * 3
    return logits - logsumexp(logits, axis=-1, keepdims=True)


# ----------------------------------------------------------------------------------------------- PCKmeans
A, B, P = [-0.1, 0.0, 0.1], [9.9, 10.0, 10.1], 4.0
LINE = np.array(A + B + [P], np.float32)[:, None]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pckmeans_solves_a_hand_computed_case(seed):
    # P = 4 is nearer cluster A (mean 0) than B (mean 10). A must-link P--10 moves it to B when w exceeds the
    # extra distance: with P in B the means are 0 and 8.5, P pays (4 - 8.5)^2 = 20.25 instead of 16.
    must = ConstraintSet([4], [6], [1.0], 7)
    free = PCKMeans(2, weight=0.0, seed=seed).fit(LINE, must)
    assert free.converged_
    assert len(set(free.labels_[[0, 1, 2, 6]])) == 1 and free.labels_[6] != free.labels_[4]
    np.testing.assert_allclose(np.sort(free.centroids_[:, 0]), [1.0, 10.0], atol=1e-5)
    assert free.history_[-1]["distortion"] == pytest.approx(1.21 + 1 + 0.81 + 9 + 0.02, rel=1e-5)

    bound = PCKMeans(2, weight=5.0, seed=seed).fit(LINE, must)
    assert len(set(bound.labels_[[3, 4, 5, 6]])) == 1 and bound.labels_[6] != bound.labels_[0]
    np.testing.assert_allclose(np.sort(bound.centroids_[:, 0]), [0.0, 8.5], atol=1e-5)
    assert bound.history_[-1]["objective"] == pytest.approx(0.02 + 1.96 + 2.25 + 2.56 + 20.25, rel=1e-5)
    # A penalty below the extra distance (20.25 - 16) is paid instead of moving P.
    cheap = PCKMeans(2, weight=4.0, seed=seed).fit(LINE, must)
    assert cheap.labels_[6] == cheap.labels_[0] and cheap.history_[-1]["violations"] == 1


def test_pckmeans_cannot_link_splits_a_cluster_and_predict_uses_centroids():
    x = np.array([[0.0], [0.2], [10.0], [10.2]], np.float32)
    cannot = ConstraintSet([0, 2], [1, 3], [-1.0, -1.0], 4)
    model = PCKMeans(2, weight=1000.0).fit(x, cannot)
    assert model.labels_[0] != model.labels_[1] and model.labels_[2] != model.labels_[3]
    np.testing.assert_array_equal(model.predict(model.centroids_), [0, 1])


def test_pckmeans_constraints_help_on_stripes():
    x, y = stripes()
    constraints = ConstraintSet.from_labels(y, 300, seed=0)
    plain = PCKMeans(2).fit(x, ConstraintSet.empty(len(y)))
    constrained = PCKMeans(2).fit(x, constraints)
    assert metrics.cluster_accuracy(y, plain.labels_) < 0.7
    assert metrics.cluster_accuracy(y, constrained.labels_) > 0.9
    assert np.mean(constraints.satisfied(constrained.labels_)) > 0.95


def test_pckmeans_initialises_from_the_largest_neighbourhoods_and_survives_empty_clusters():
    constraints = ConstraintSet([0, 1, 5], [1, 2, 6], [1.0, 1.0, 1.0], 8)
    hoods = must_link_neighbourhoods(constraints)
    assert [h.tolist() for h in hoods] == [[0, 1, 2], [5, 6]]
    x = np.zeros((8, 3), np.float32)  # identical points: k-means keeps emptying clusters
    model = PCKMeans(3, max_iter=5).fit(x, constraints)
    assert np.isfinite(model.centroids_).all() and set(model.labels_) <= {0, 1, 2}


def test_pckmeans_reuses_the_must_link_components_of_the_constraint_set(monkeypatch):
    x, y = stripes()
    constraints = ConstraintSet.from_labels(y, 300, seed=0)
    must, n = constraints.must_link_mask, len(y)
    graph = sparse.coo_matrix((np.ones(must.sum()), (constraints.i[must], constraints.j[must])), shape=(n, n))
    _, direct = csgraph.connected_components(graph, directed=False)
    sizes = np.bincount(direct)
    expected = [np.flatnonzero(direct == c) for c in np.argsort(-sizes, kind="stable") if sizes[c] > 1]
    calls = []
    connected_components = csgraph.connected_components
    monkeypatch.setattr(
        csgraph,
        "connected_components",
        lambda *args, **kwargs: calls.append(1) or connected_components(*args, **kwargs),
    )
    hoods = must_link_neighbourhoods(constraints)
    assert [h.tolist() for h in hoods] == [h.tolist() for h in expected]
    PCKMeans(2).fit(x, constraints)
    assert len(calls) == 1  # computed once by the set, then reused by the fit's initialisation


def test_independent_sets_partition_the_constrained_samples():
    constraints = ConstraintSet.from_labels(np.arange(200) % 3, 400, seed=1)
    sets = independent_sets(constraints)
    members = np.concatenate(sets)
    assert np.array_equal(np.sort(members), np.unique(np.concatenate([constraints.i, constraints.j])))
    colour = np.full(constraints.num_samples, -1)
    for c, s in enumerate(sets):
        colour[s] = c
    assert (colour[constraints.i] != colour[constraints.j]).all()


# ------------------------------------------------------------------------------------- DEC losses vs NumPy
def test_student_t_assignments_and_target_distribution_match_numpy():
    rng = np.random.default_rng(0)
    z, centers = rng.normal(size=(6, 3)), rng.normal(size=(4, 3))
    kernel = (1 + ((z[:, None] - centers[None]) ** 2).sum(-1) / 2.0) ** (-1.5)
    q = kernel / kernel.sum(1, keepdims=True)
    np.testing.assert_allclose(np.exp(numpy_of(dec.student_t_log_assignments(z, centers, alpha=2.0))), q, rtol=1e-6)
    weight = q**2 / q.sum(0)
    np.testing.assert_allclose(dec.target_distribution(q), weight / weight.sum(1, keepdims=True), rtol=1e-5)


def test_clustering_kl_matches_numpy_and_ignores_zero_targets():
    rng = np.random.default_rng(1)
    log_q = random_log_q(rng, (5, 4))
    p = np.exp(random_log_q(rng, (5, 4)))
    p[0] = [1.0, 0.0, 0.0, 0.0]
    expected = np.mean(np.sum(np.where(p > 0, p * (np.log(np.where(p > 0, p, 1)) - log_q), 0), -1))
    assert float(dec.clustering_kl(p, keras.ops.convert_to_tensor(log_q))) == pytest.approx(expected, rel=1e-6)


def test_pairwise_losses_match_numpy():
    rng = np.random.default_rng(2)
    log_q_i, log_q_j = random_log_q(rng, (7, 5)), random_log_q(rng, (7, 5))
    same = np.sum(np.exp(log_q_i) * np.exp(log_q_j), -1)
    np.testing.assert_allclose(float(dec.must_link_loss(log_q_i, log_q_j)), np.mean(-np.log(same)), rtol=1e-6)
    np.testing.assert_allclose(float(dec.cannot_link_loss(log_q_i, log_q_j)), np.mean(-np.log(1 - same)), rtol=1e-6)
    z_i, z_j = rng.normal(size=(7, 3)), rng.normal(size=(7, 3))
    sign = np.array([1, -1, 1, -1, -1, -1, 1], np.float32)
    expected = np.sum(sign * ((z_i - z_j) ** 2).sum(-1)) / 7
    assert float(dec.pairwise_distance_loss(z_i, z_j, sign)) == pytest.approx(expected, rel=1e-6)


def test_cannot_link_loss_stays_finite_when_both_samples_are_surely_in_one_cluster():
    # q_i = q_j = (1 - 1e-9, 1e-9): 1 - sum q_i q_j = 2e-9 - 2e-18 rounds to 0 in float32 when done naively.
    log_q = np.log(np.array([[1 - 1e-9, 1e-9]]))
    log_q32 = keras.ops.convert_to_tensor(log_q.astype(np.float32))
    expected = -np.log(2e-9 - 2e-18)
    assert float(dec.cannot_link_loss(log_q32, log_q32)) == pytest.approx(expected, rel=1e-4)
    grad = keras.ops.convert_to_numpy(_gradient(dec.cannot_link_loss, log_q32))
    assert np.isfinite(grad).all()


def _gradient(loss, log_q):
    import tensorflow as tf

    with tf.GradientTape() as tape:
        tape.watch(log_q)
        value = loss(tf.nn.log_softmax(log_q), tf.nn.log_softmax(log_q))
    return tape.gradient(value, log_q)


def test_clustering_layer_outputs_rows_summing_to_one_and_round_trips_config():
    layer = ClusteringLayer(4, alpha=2.0, name="c")
    q = numpy_of(layer(np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32)))
    np.testing.assert_allclose(q.sum(1), 1.0, rtol=1e-6)
    clone = ClusteringLayer.from_config(layer.get_config())
    assert (clone.num_clusters, clone.alpha) == (4, 2.0)


# ---------------------------------------------------------------------------------------- SDEC and C-IDEC
@pytest.mark.slow
def test_sdec_pair_gradient_reaches_the_encoder_and_constraints_help():
    x, y = stripes()
    constraints = ConstraintSet.from_labels(y, 600, seed=0)
    results = {}
    for name, given in (("plain", ConstraintSet.empty(len(y))), ("constrained", constraints)):
        keras.utils.set_random_seed(0)
        autoencoder = StackedAutoencoder(2, latent_dim=2, hidden_units=(16, 16, 32))
        model = SDEC(autoencoder.encoder, 2, pair_weight=0.1)
        model.compile(optimizer=keras.optimizers.Adam(3e-3))
        model.initialize_centers(x)
        # 20 epochs: with 10, ACC > 0.8 held for two of five batch orders (0.74-0.87); with 20, 0.98-0.99 for all.
        history = model.fit_clusters(x, given, epochs=20, batch_size=64, tol=0.0)
        results[name] = model.predict(x, verbose=0).argmax(1)
        assert len(history) == 20 and (history[0]["pairwise"] != 0) == (name == "constrained")
    assert metrics.cluster_accuracy(y, results["plain"]) < 0.7
    assert metrics.cluster_accuracy(y, results["constrained"]) > 0.8
    assert np.mean(constraints.satisfied(results["constrained"])) > np.mean(constraints.satisfied(results["plain"]))


def test_cidec_must_link_pulls_a_pair_together_and_cannot_link_pushes_one_apart():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(-2, 0.5, (20, 2)), rng.normal(2, 0.5, (20, 2))]).astype(np.float32)
    inside = ((x[:20, None] - x[None, :20]) ** 2).sum(-1)
    far, near = (0, 39), np.unravel_index(inside.argmax(), inside.shape)  # across the blobs; inside one
    for key, (i, j) in (("ml", far), ("cl", near)):
        keras.utils.set_random_seed(0)
        autoencoder = StackedAutoencoder(2, latent_dim=2, hidden_units=(16, 16, 16))
        model = CIDEC(autoencoder.encoder, autoencoder.decoder, 2)
        model.compile(optimizer=keras.optimizers.Adam(1e-2))
        model.initialize_centers(x)
        before = model.predict(x, verbose=0).argmax(1)
        assert (before[i] == before[j]) == (key == "cl")
        batch = {f"{key}_i": np.repeat(x[[i]], 64, 0), f"{key}_j": np.repeat(x[[j]], 64, 0)}
        model.fit(batch, batch_size=16, epochs=20, verbose=0)
        after = model.predict(x, verbose=0).argmax(1)
        assert (after[i] == after[j]) == (key == "ml")


def test_cidec_epoch_logs_all_losses_and_stops_at_tolerance():
    x, y = stripes(n=120)
    constraints = ConstraintSet.from_labels(y, 100, seed=0)
    keras.utils.set_random_seed(0)
    autoencoder = StackedAutoencoder(2, latent_dim=2, hidden_units=(8, 8, 8))
    model = CIDEC(autoencoder.encoder, autoencoder.decoder, 2)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    model.initialize_centers(x)
    history = model.fit_clusters(x, constraints, epochs=6, batch_size=60, tol=1.0)
    assert history[0].keys() >= {"reconstruction", "cluster_kl", "must_link", "cannot_link"}
    assert [h["stopped"] for h in history] == [False, True]  # any change is below tol = 100%


# ------------------------------------------------------------------------------------ layer-wise pretraining
def test_dec_batches_are_the_pydataset_batches_keras_made_before():
    """shuffled_batches gives, as a tf.data graph, the batches (rows and order) of the PyDataset it replaced:
    numpy's permutation cut into batches, the extra pairs cycled, the order shuffled by Python's random."""
    import random

    x = np.arange(50, dtype=np.float32)[:, None] * np.ones((1, 3), np.float32)
    pairs = {"x_i": np.arange(100, 107, dtype=np.float32), "sign": np.ones(7, np.float32)}
    got = [
        {k: v.numpy() for k, v in b.items()}
        for b in dec.shuffled_batches({"x": x}, 16, np.random.default_rng(1), random.Random(4), extra=pairs)
    ]
    rng = np.random.default_rng(1)
    order, extra = rng.permutation(50), np.concatenate([rng.permutation(7) for _ in range(2)])
    random.seed(4)
    sequence = list(range(4))
    random.shuffle(sequence)
    assert len(got) == 4
    for batch, b in zip(got, sequence):
        np.testing.assert_array_equal(batch["x"], x[order[16 * b : 16 * (b + 1)]])
        np.testing.assert_array_equal(batch["x_i"], pairs["x_i"][extra[2 * b : 2 * (b + 1)]])
    assert sorted(np.concatenate([b["x"][:, 0] for b in got]).tolist()) == list(range(50))


def test_layerwise_pretraining_trains_every_layer_and_uses_the_cache(tmp_path):
    x, _ = stripes(n=200)
    keras.utils.set_random_seed(0)
    autoencoder = StackedAutoencoder(2, latent_dim=2, hidden_units=(8, 8, 8))
    before = [w.copy() for w in autoencoder.get_weights()]
    error = lambda: float(np.mean((autoencoder.predict(x, verbose=0) - x) ** 2))  # noqa: E731
    initial = error()
    cache = tmp_path / "ae.weights.h5"
    assert not pretrain_layerwise(autoencoder, x, layer_epochs=2, finetune_epochs=3, batch_size=20, cache_path=cache)
    assert error() < initial
    assert all(not np.allclose(a, b) for a, b in zip(before, autoencoder.get_weights()))
    clone = StackedAutoencoder(2, latent_dim=2, hidden_units=(8, 8, 8))
    assert pretrain_layerwise(clone, x, layer_epochs=2, finetune_epochs=3, cache_path=cache)
    for a, b in zip(autoencoder.get_weights(), clone.get_weights()):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------------------------ Table 1 runner
def test_table1_puts_mean_and_std_next_to_the_paper():
    import pandas as pd

    from experiments import table1

    rows = pd.DataFrame(
        {
            "dataset": "fashion_mnist",
            "method": ["pckmeans", "pckmeans", "cidec"],
            "acc": [0.50, 0.60, 0.70],
            "nmi": 0.5,
            "ari": 0.4,
            "epochs": [100, 100, 10],
            "train_seconds": [10.0, 20.0, 30.0],
        }
    )
    paper = pd.read_csv(table1.flags.FLAGS["paper_table"].default, dtype=str)
    table = table1.make_table(rows, paper).set_index(["method", "metric"])
    assert table.at[("pckmeans", "acc"), "measured"] == "55.0±7.1"
    assert table.at[("pckmeans", "acc"), "paper"] == "53.9±2.9"
    assert table.at[("cidec", "ari"), "measured"] == "40.0" and table.at[("cidec", "ari"), "paper"] == "52.3±3.0"
    markdown = table1.to_markdown(table.reset_index())
    assert "| fashion_mnist | ACC | 55.0±7.1 | 53.9±2.9 | 70.0 | 68.1±3.0 |" in markdown
    assert table1.parse_overrides(["sdec.epochs=30", "sdec.dec_tol=0.01"]) == {
        "sdec": {"epochs": "30", "dec_tol": "0.01"}
    }
    with pytest.raises(ValueError, match="method.flag=value"):
        table1.parse_overrides(["epochs=30"])


def test_table1_entries_run_a_method_under_a_protocol_with_its_own_runs_and_list_what_was_not_run():
    import pandas as pd

    from dcgmm_tf.config import RunConfig
    from experiments import table1
    from tests.helpers import parsed_flags

    argv = ["table1", "--methods=vade,dcgmm,dcgmm@paper", "--runs=3", "--num_constraints=600"]
    overrides = table1.parse_overrides(["dcgmm.runs=10", "dcgmm@paper.epochs=50"])
    with parsed_flags(argv) as values:
        configs, runs = table1.entry_configs(values, values.methods, overrides)
        with pytest.raises(ValueError, match="protocol must be one of"):
            table1.entry_configs(values, ["dcgmm@mine"], {})
    assert runs == {"vade": 3, "dcgmm": 10, "dcgmm@paper": 3}
    assert configs["dcgmm"] == RunConfig(num_constraints=600)
    assert configs["dcgmm@paper"] == RunConfig.protocol("paper", num_constraints=600, epochs=50)
    assert configs["vade"] == RunConfig(method="vade", num_constraints=600)
    rows = pd.DataFrame(
        {
            "dataset": "mnist",
            "method": "dcgmm",
            "entry": ["dcgmm", "dcgmm", "dcgmm@paper"],
            "acc": [0.96, 0.97, 0.90],
            "nmi": 0.9,
            "ari": 0.9,
            "epochs": [10, 10, 50],
            "train_seconds": 100.0,
        }
    )
    paper = pd.read_csv(table1.flags.FLAGS["paper_table"].default, dtype=str)
    markdown = table1.to_markdown(table1.make_table(rows, paper), ["reuters", "stl10"], "python -m x --y")
    assert "| mnist | ACC | 96.5±0.7 | 96.6±0.1 | 90.0 | 96.6±0.1 |" in markdown
    assert "DC-GMM ours | DC-GMM paper | DC-GMM (paper) ours | DC-GMM (paper) paper |" in markdown
    assert "| mnist DC-GMM (paper) | 1 | 50 | 100 |" in markdown and "| mnist DC-GMM | 2 | 10 | 100 |" in markdown
    assert f"- reuters: {table1.NOT_RUN}.\n- stl10: {table1.NOT_RUN}." in markdown
    assert markdown.endswith("Made by `python -m x --y`.\n")
