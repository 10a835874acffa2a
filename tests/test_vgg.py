"""The VGG-like conv encoder/decoder, in DC-GMM, through .keras files and through run.py's flags."""

import keras
import numpy as np
import pytest

from dcgmm_tf import DCGMM, ConstraintSet, recipe
from dcgmm_tf.config import RunConfig
from dcgmm_tf.data import DataSplits, constrained_dataset
from dcgmm_tf.networks import MLPEncoder, VGGDecoder, VGGEncoder


def vgg_model(likelihood="bernoulli", shape=(8, 8, 1), filters=(4, 8)):
    return DCGMM(
        shape,
        num_clusters=3,
        latent_dim=5,
        likelihood=likelihood,
        seed=0,
        encoder=VGGEncoder(5, filters, name="encoder"),
        decoder=VGGDecoder(shape, filters, likelihood, name="decoder"),
    )


@pytest.mark.parametrize("likelihood, channels", [("bernoulli", 3), ("gaussian", 6)])
def test_shapes(likelihood, channels):
    model = vgg_model(likelihood, shape=(8, 12, 3))
    x = np.random.default_rng(0).random((2, 8, 12, 3)).astype(np.float32)
    mu, log_var = model.encoder(x)
    assert mu.shape == (2, 5) and log_var.shape == (2, 5)
    assert model.decoder(mu).shape == (2, 8, 12, channels)
    assert model.predict(x, verbose=0).shape == (2, 3)
    assert [layer.filters for layer in model.encoder.blocks if hasattr(layer, "filters")] == [4, 4, 8, 8]
    assert [layer.filters for layer in model.decoder.blocks if hasattr(layer, "filters")] == [8, 8, 4, 4]
    assert model.sample(1, 4, seed=1).shape == (4, 8, 12, 3)


@pytest.mark.parametrize("shape", [(10, 8, 1), (8, 8), (784,)])
def test_rejects_images_the_blocks_cannot_halve(shape):
    with pytest.raises(ValueError, match="divisible by 4"):
        VGGDecoder(shape, (4, 8))
    with pytest.raises(ValueError, match="divisible by 4"):
        VGGEncoder(5, (4, 8)).build((None, *shape))


def test_keras_round_trip_and_tiny_fit(tmp_path):
    rng = np.random.default_rng(0)
    x = (rng.random((24, 8, 8, 1)) > 0.5).astype(np.float32)
    labels = np.repeat(np.arange(3), 8)
    model = vgg_model()
    before = [w.numpy().copy() for w in model.encoder.weights]
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    constraints = ConstraintSet.from_labels(labels, 20, seed=0)
    history = model.fit(constrained_dataset(x, constraints, batch_size=8, seed=0), epochs=2, verbose=0, shuffle=False)
    assert all(np.isfinite(v).all() for v in history.history.values())
    assert history.history["constraint"][0] != 0
    assert any(not np.allclose(b, w.numpy()) for b, w in zip(before, model.encoder.weights))

    model.save(tmp_path / "vgg.keras")
    loaded = keras.saving.load_model(tmp_path / "vgg.keras")
    assert isinstance(loaded.encoder, VGGEncoder) and isinstance(loaded.decoder, VGGDecoder)
    assert loaded.decoder.get_config()["output_shape"] == [8, 8, 1]
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)
    np.testing.assert_allclose(loaded.embed(x), model.embed(x), atol=1e-6)


def test_config_selects_vgg_networks_and_image_inputs():
    x = np.random.default_rng(0).random((10, 64)).astype(np.float32)
    y = np.arange(10) % 2
    data = DataSplits(x, y, x[:4], y[:4], name="t", likelihood="bernoulli", image_shape=(8, 8, 1))
    config = RunConfig(architecture="vgg", vgg_filters=(4, 8), latent_dim=3, max_train_samples=6, num_constraints=5)
    run = recipe.prepare_run(config, data, num_clusters=2)
    x_train, y_train, x_test, _ = run.inputs
    assert x_train.shape == (6, 8, 8, 1) and x_test.shape == (4, 8, 8, 1) and y_train.shape == (6,)
    assert len(run.train_indices) == 6 and np.array_equal(run.data.x_train, x[run.train_indices])
    model = recipe.make_model(config, x_train.shape[1:], data.likelihood, 2, seed=0)
    assert isinstance(model.encoder, VGGEncoder) and model.encoder.filters == (4, 8)
    assert model.decoder.image_shape == (8, 8, 1) and model.latent_dim == 3
    mlp = RunConfig(latent_dim=3)
    assert isinstance(recipe.make_model(mlp, (64,), data.likelihood, 2, seed=0).encoder, MLPEncoder)
    assert recipe.model_inputs(recipe.subsets(data, mlp), mlp).x_train.shape == (10, 64)
