"""studies.input_baselines: k-means and a diagonal GMM on the input, fitted on one split and scored on another."""


def test_input_baselines_cluster_the_test_split_from_the_training_split():
    from sklearn.datasets import make_blobs
    from sklearn.metrics import adjusted_rand_score

    from studies.input_baselines import input_baselines

    x, y = make_blobs(300, centers=3, n_features=4, random_state=0)
    found = input_baselines(x[:200], x[200:], 3, seed=0, n_init=2)
    assert set(found) == {"kmeans", "gmm_diag"}
    for clusters, seconds in found.values():
        assert clusters.shape == (100,) and seconds >= 0
        assert adjusted_rand_score(y[200:], clusters) > 0.95
