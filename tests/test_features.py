"""HOG input features: the vectorised maths against a per-image loop, their scaling against numpy, their properties,
and the run that reads them."""

import dataclasses

import numpy as np
import pytest

from dcgmm_tf import data as data_package
from dcgmm_tf import recipe
from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.data import load_dataset
from dcgmm_tf.data.features import hog_features, hog_size, scaled_to_train_maximum, with_input_features
from dcgmm_tf.estimator import DCGMMClustering
from dcgmm_tf.metrics import cluster_accuracy
from tests.helpers import TINY


def hog_reference(image, cell, orientations, block):
    """HOG of one image written out pixel by pixel and block by block, as Dalal & Triggs describe it."""
    image = image.astype(np.float64)
    height, width = image.shape
    cy, cx = height // cell, width // cell
    hist = np.zeros((cy, cx, orientations))
    for r in range(cy * cell):
        for c in range(cx * cell):
            dr = image[r + 1, c] - image[r - 1, c] if 0 < r < height - 1 else 0.0
            dc = image[r, c + 1] - image[r, c - 1] if 0 < c < width - 1 else 0.0
            angle = np.degrees(np.arctan2(dr, dc)) % 180.0
            b = min(int(angle / (180.0 / orientations)), orientations - 1)
            hist[r // cell, c // cell, b] += np.hypot(dr, dc) / cell**2
    features = []
    for r in range(cy - block + 1):
        for c in range(cx - block + 1):
            v = hist[r : r + block, c : c + block].ravel()
            v = v / np.sqrt(np.sum(v**2) + 1e-10)
            v = np.minimum(v, 0.2)
            features.append(v / np.sqrt(np.sum(v**2) + 1e-10))
    return np.concatenate(features)


@pytest.mark.parametrize("cell, orientations, block, shape", [(4, 9, 2, (28, 28)), (5, 6, 3, (23, 31))])
def test_hog_matches_the_per_image_reference(cell, orientations, block, shape):
    images = np.random.default_rng(0).random((5, *shape)).astype(np.float32)
    images[0] = 0  # a blank image: every block empty
    got = hog_features(images, cell, orientations, block, chunk=2)  # chunks of 2, 2, 1
    want = np.stack([hog_reference(x, cell, orientations, block) for x in images])
    assert got.shape == (5, hog_size(*shape, cell, orientations, block)) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert np.all(got[0] == 0) and got.min() >= 0 and got.max() <= 1


def test_hog_ignores_brightness_and_sees_the_direction_of_an_edge():
    x = np.zeros((1, 16, 16), np.float32)
    x[0, :, 8:] = 1.0  # a vertical edge: the gradient runs along the columns, orientation 0 degrees
    features = hog_features(x).reshape(3, 3, 2, 2, 9)
    np.testing.assert_allclose(hog_features(0.3 * x), hog_features(x), atol=1e-6)
    assert features[..., 1:].max() == 0 and features[..., 0].max() > 0
    turned = hog_features(x.transpose(0, 2, 1)).reshape(3, 3, 2, 2, 9)  # a horizontal edge: 90 degrees
    assert turned[..., 4].max() > 0 and np.delete(turned, 4, axis=-1).max() == 0


def test_hog_refuses_what_it_cannot_compute():
    with pytest.raises(ValueError, match=r"\[N, H, W\]"):
        hog_features(np.zeros((2, 64)))
    with pytest.raises(ValueError, match="no block"):
        hog_features(np.zeros((2, 6, 6)))


def test_scaling_divides_each_feature_by_its_training_maximum_and_clips_the_test_split():
    rng = np.random.default_rng(0)
    x_train = (rng.random((50, 6)) * [0.1, 0.2, 0.3, 0.5, 1.0, 0.0]).astype(np.float32)  # the last one is all zero
    x_test = (rng.random((20, 6)) * 0.4).astype(np.float32)  # beyond the training maxima in the first 3
    train, test = scaled_to_train_maximum(x_train, x_test)
    top = x_train.max(axis=0)
    np.testing.assert_allclose(train[:, :5], x_train[:, :5] / top[:5], rtol=1e-6)
    np.testing.assert_allclose(test[:, :5], np.minimum(x_test[:, :5] / top[:5], 1.0), rtol=1e-6)
    np.testing.assert_array_equal(train[:, 5], 0)  # zero in training: kept as it is
    np.testing.assert_array_equal(test[:, 5], x_test[:, 5])
    assert train.dtype == test.dtype == np.float32 and np.array_equal(train.max(axis=0)[:5], np.ones(5, np.float32))
    assert test.max() == 1 and (test[:, :3] == 1).any() and test.min() >= 0
    with pytest.raises(ValueError, match="non-negative"):
        scaled_to_train_maximum(x_train - 0.5, x_test)
    with pytest.raises(ValueError, match="same F"):
        scaled_to_train_maximum(x_train, x_test[:, :5])


def test_the_features_of_a_data_set_and_what_they_refuse():
    digits = load_dataset("digits")
    assert with_input_features(digits, "pixels") is digits
    hog = with_input_features(digits, "hog")
    assert hog.x_train.shape == (len(digits.x_train), 36) and hog.x_test.shape == (len(digits.x_test), 36)
    np.testing.assert_array_equal(hog.x_train, hog_features(digits.x_train.reshape(-1, 8, 8)))
    assert hog.likelihood == "bernoulli" and hog.image_shape is None and np.array_equal(hog.y_train, digits.y_train)
    scaled = with_input_features(digits, "hog_scaled")
    want_train, want_test = scaled_to_train_maximum(hog.x_train, hog.x_test)  # the maxima of the training split
    np.testing.assert_array_equal(scaled.x_train, want_train)
    np.testing.assert_array_equal(scaled.x_test, want_test)
    assert scaled.likelihood == "bernoulli" and scaled.image_shape is None and scaled.x_train.max() == 1
    with pytest.raises(ValueError, match="needs grey images"):
        with_input_features(hog, "hog")  # no images any more
    rgb = dataclasses.replace(
        digits, x_train=np.tile(digits.x_train, 3), x_test=np.tile(digits.x_test, 3), image_shape=(8, 8, 3)
    )
    with pytest.raises(ValueError, match="needs grey images"):
        with_input_features(rgb, "hog")
    with pytest.raises(ValueError, match="must be one of"):
        with_input_features(digits, "sift")
    with pytest.raises(ValueError, match="needs architecture mlp"):
        RunConfig(input_features="hog", architecture="vgg")
    with pytest.raises(ValueError, match="needs architecture mlp"):
        RunConfig(input_features="hog_scaled", architecture="vgg")


@pytest.mark.slow
def test_a_run_on_hog_features_trains_and_spreads_its_answers_there(tmp_path):
    config = RunConfig(
        dataset="digits",
        input_features="hog",
        num_constraints=200,
        epochs=2,
        pretrain_epochs=40,  # a start that clusters (start ACC about .55; one epoch starts at chance on some CPUs)
        pair_tuning_epochs=0,
        latent_dim=4,
        batch_size=64,
        restart_every=0,
    )
    assert config.key() != dataclasses.replace(config, input_features="pixels").key()
    data = load_dataset("digits")
    run = recipe.prepare_run(config, data)
    features = hog_features(data.x_train.reshape(-1, 8, 8))
    np.testing.assert_array_equal(run.inputs.x_train, features)
    spread_by_features = recipe.training_pairs(config, features, run.answers)
    assert len(run.constraints) == len(spread_by_features) > len(run.answers)
    runtime = RuntimeConfig(verbose=0, eval_every=1, output_dir=str(tmp_path / "out"), cache_dir=str(tmp_path / "c"))
    result = recipe.train_and_evaluate(config, data, runtime)
    assert result.trained.model.encoder.weights[0].shape[0] == 36  # the first layer reads the 36 features
    chance = cluster_accuracy(data.y_test, np.random.default_rng(0).integers(10, size=len(data.y_test)))
    assert result.row["start_acc"] > 2 * chance  # the features' embedding clusters before any pair is used
    assert 0.3 < result.row["acc"] <= 1 and result.row["n_train"] == len(data.x_train)


def test_the_estimator_clusters_hog_features_given_as_its_input():
    assert data_package.hog_features is hog_features  # the README's import for estimator users
    digits = load_dataset("digits")
    images, y = digits.x_train[:240].reshape(-1, 8, 8), digits.y_train[:240]
    same = [(i, j) for i, j in zip(np.flatnonzero(y == 0)[:10], np.flatnonzero(y == 0)[10:20])]
    est = DCGMMClustering(3, **TINY).fit(hog_features(images), ml=same)
    assert est.n_features_in_ == 36 and est.likelihood_ == "gaussian" and est.labels_.shape == (240,)
    with pytest.raises(ValueError, match="expecting 36 features"):
        est.predict(images.reshape(240, -1))  # the pixels are not what it was fitted on
