"""Encoder and decoder networks.

An encoder maps x to the parameters of q(z|x) = N(mu(x), diag sigma^2(x)) and returns the pair
``(mu, log_var)``. A decoder maps z to the parameters of p(x|z): Bernoulli logits shaped like x, or for a Gaussian
likelihood the mean and log-variance concatenated on the last axis. The MLP networks take flat vectors
``[B, M]``, the VGG-like ones images ``[B, H, W, C]``.
Any Keras layer with that contract can be given to :class:`dcgmm_tf.DCGMM`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import keras

from dcgmm_tf.losses import LIKELIHOODS

PAPER_HIDDEN_UNITS = (500, 500, 2000)


@keras.saving.register_keras_serializable(package="dcgmm_tf")
class MLPEncoder(keras.layers.Layer):
    """Fully connected encoder (the paper's 500-500-2000 ReLU by default) with mean and log-variance heads."""

    def __init__(self, latent_dim: int = 10, hidden_units: Sequence[int] = PAPER_HIDDEN_UNITS, **kwargs):
        super().__init__(**kwargs)
        self.latent_dim = int(latent_dim)
        self.hidden_units = tuple(int(u) for u in hidden_units)
        self.hidden = [
            keras.layers.Dense(u, activation="relu", name=f"dense_{n}") for n, u in enumerate(self.hidden_units)
        ]
        self.mean_head = keras.layers.Dense(self.latent_dim, name="z_mean")
        self.log_var_head = keras.layers.Dense(self.latent_dim, name="z_log_var")

    def build(self, input_shape):
        shape = input_shape
        for layer in self.hidden:
            layer.build(shape)
            shape = layer.compute_output_shape(shape)
        self.mean_head.build(shape)
        self.log_var_head.build(shape)

    def call(self, x):
        h = x
        for layer in self.hidden:
            h = layer(h)
        return self.mean_head(h), self.log_var_head(h)

    def get_config(self):
        return {**super().get_config(), "latent_dim": self.latent_dim, "hidden_units": list(self.hidden_units)}


@keras.saving.register_keras_serializable(package="dcgmm_tf")
class MLPDecoder(keras.layers.Layer):
    """Fully connected decoder mirroring :class:`MLPEncoder` (2000-500-500 ReLU by default).

    ``likelihood="bernoulli"`` outputs ``output_dim`` logits; ``"gaussian"`` outputs the mean and the
    log-variance of each feature, concatenated (``2 * output_dim``).
    """

    def __init__(
        self,
        output_dim: int,
        hidden_units: Sequence[int] = PAPER_HIDDEN_UNITS[::-1],
        likelihood: str = "bernoulli",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if likelihood not in LIKELIHOODS:
            raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {likelihood!r}")
        self.output_dim = int(output_dim)
        self.hidden_units = tuple(int(u) for u in hidden_units)
        self.likelihood = likelihood
        self.hidden = [
            keras.layers.Dense(u, activation="relu", name=f"dense_{n}") for n, u in enumerate(self.hidden_units)
        ]
        width = self.output_dim * (2 if likelihood == "gaussian" else 1)
        self.out = keras.layers.Dense(width, name="x_params")

    def build(self, input_shape):
        shape = input_shape
        for layer in self.hidden:
            layer.build(shape)
            shape = layer.compute_output_shape(shape)
        self.out.build(shape)

    def call(self, z):
        h = z
        for layer in self.hidden:
            h = layer(h)
        return self.out(h)

    def get_config(self):
        return {
            **super().get_config(),
            "output_dim": self.output_dim,
            "hidden_units": list(self.hidden_units),
            "likelihood": self.likelihood,
        }


PAPER_VGG_FILTERS = (32, 64)


def _vgg_block(filters: int, name: str) -> list[keras.layers.Layer]:
    """Two 3x3 ReLU convolutions with 'same' padding."""
    return [keras.layers.Conv2D(filters, 3, padding="same", activation="relu", name=f"{name}_conv{n}") for n in (1, 2)]


def _build_sequence(layers: Sequence[keras.layers.Layer], shape: tuple) -> tuple:
    for layer in layers:
        layer.build(shape)
        shape = layer.compute_output_shape(shape)
    return shape


@keras.saving.register_keras_serializable(package="dcgmm_tf")
class VGGEncoder(keras.layers.Layer):
    """VGG-like convolutional encoder of the paper's appendix (heart echo and UTKFace).

    Each block is two 3x3 ReLU convolutions and a 2x2 max-pooling; the flattened output feeds the mean and
    log-variance heads directly. The paper uses ``filters=(32, 64)`` for 64x64x1 frames and ``(64, 128)`` for
    64x64x3 faces. Inputs are images ``[B, H, W, C]`` with H and W divisible by ``2 ** len(filters)``.
    """

    def __init__(self, latent_dim: int = 10, filters: Sequence[int] = PAPER_VGG_FILTERS, **kwargs):
        super().__init__(**kwargs)
        self.latent_dim = int(latent_dim)
        self.filters = tuple(int(f) for f in filters)
        if not self.filters:
            raise ValueError("filters must name at least one block")
        self.blocks = []
        for n, f in enumerate(self.filters):
            self.blocks += [*_vgg_block(f, f"block{n}"), keras.layers.MaxPooling2D(2, name=f"block{n}_pool")]
        self.flatten = keras.layers.Flatten(name="flatten")
        self.mean_head = keras.layers.Dense(self.latent_dim, name="z_mean")
        self.log_var_head = keras.layers.Dense(self.latent_dim, name="z_log_var")

    def build(self, input_shape):
        _check_image_shape(input_shape[1:], len(self.filters))
        shape = _build_sequence([*self.blocks, self.flatten], input_shape)
        self.mean_head.build(shape)
        self.log_var_head.build(shape)

    def call(self, x):
        h = x
        for layer in self.blocks:
            h = layer(h)
        h = self.flatten(h)
        return self.mean_head(h), self.log_var_head(h)

    def get_config(self):
        return {**super().get_config(), "latent_dim": self.latent_dim, "filters": list(self.filters)}


@keras.saving.register_keras_serializable(package="dcgmm_tf")
class VGGDecoder(keras.layers.Layer):
    """Convolutional decoder mirroring :class:`VGGEncoder`.

    A dense layer maps z to the smallest feature map, then each block upsamples by 2 and applies two 3x3
    ReLU convolutions (filters in the encoder's reverse order); a final 3x3 convolution gives, per pixel,
    ``C`` Bernoulli logits or, for ``likelihood="gaussian"``, ``C`` means and ``C`` log-variances
    concatenated on the channel axis (``2C`` channels).

    Args:
        output_shape: image shape ``(H, W, C)``.
        filters: encoder filters, e.g. ``(32, 64)``; the decoder uses them in reverse.
        likelihood: ``"bernoulli"`` or ``"gaussian"``.
    """

    def __init__(
        self,
        output_shape: Sequence[int],
        filters: Sequence[int] = PAPER_VGG_FILTERS,
        likelihood: str = "bernoulli",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if likelihood not in LIKELIHOODS:
            raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {likelihood!r}")
        self.image_shape = tuple(int(s) for s in output_shape)
        self.filters = tuple(int(f) for f in filters)
        self.likelihood = likelihood
        _check_image_shape(self.image_shape, len(self.filters))
        height, width, channels = self.image_shape
        scale = 2 ** len(self.filters)
        self.seed_shape = (height // scale, width // scale, self.filters[-1])
        self.dense = keras.layers.Dense(math.prod(self.seed_shape), activation="relu", name="dense")
        self.reshape = keras.layers.Reshape(self.seed_shape, name="reshape")
        self.blocks = []
        for n, f in enumerate(self.filters[::-1]):
            self.blocks += [keras.layers.UpSampling2D(2, name=f"block{n}_upsample"), *_vgg_block(f, f"block{n}")]
        out_channels = channels * (2 if likelihood == "gaussian" else 1)
        self.out = keras.layers.Conv2D(out_channels, 3, padding="same", name="x_params")

    def build(self, input_shape):
        _build_sequence([self.dense, self.reshape, *self.blocks, self.out], input_shape)

    def call(self, z):
        h = self.reshape(self.dense(z))
        for layer in self.blocks:
            h = layer(h)
        return self.out(h)

    def get_config(self):
        return {
            **super().get_config(),
            "output_shape": list(self.image_shape),
            "filters": list(self.filters),
            "likelihood": self.likelihood,
        }


def _check_image_shape(shape: Sequence[int], num_blocks: int) -> None:
    """Raise unless ``shape`` is ``(H, W, C)`` with H and W divisible by 2**num_blocks."""
    scale = 2**num_blocks
    if len(shape) != 3 or any(s is None or int(s) % scale for s in shape[:2]):
        raise ValueError(
            f"VGG networks with {num_blocks} blocks need images (H, W, C) with H and W divisible "
            f"by {scale}; got sample shape {tuple(shape)}"
        )
