"""Encoder and decoder networks.

An encoder maps x to the parameters of q(z|x) = N(mu(x), diag sigma^2(x)) and returns the pair
``(mu, log_var)``. A decoder maps z to the parameters of p(x|z): Bernoulli logits of shape
``[..., M]``, or for a Gaussian likelihood the mean and log-variance concatenated, ``[..., 2M]``.
Any Keras layer with that contract can be given to :class:`dcgmm_tf.DCGMM`.
"""

from __future__ import annotations

from typing import Sequence

import keras

PAPER_HIDDEN_UNITS = (500, 500, 2000)


@keras.saving.register_keras_serializable(package="dcgmm_tf")
class MLPEncoder(keras.layers.Layer):
    """Fully connected encoder (the paper's 500-500-2000 ReLU by default) with mean and log-variance heads."""

    def __init__(self, latent_dim: int = 10, hidden_units: Sequence[int] = PAPER_HIDDEN_UNITS, **kwargs):
        super().__init__(**kwargs)
        self.latent_dim = int(latent_dim)
        self.hidden_units = tuple(int(u) for u in hidden_units)
        self.hidden = [keras.layers.Dense(u, activation="relu", name=f"dense_{n}")
                       for n, u in enumerate(self.hidden_units)]
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

    def __init__(self, output_dim: int, hidden_units: Sequence[int] = PAPER_HIDDEN_UNITS[::-1],
                 likelihood: str = "bernoulli", **kwargs):
        super().__init__(**kwargs)
        if likelihood not in ("bernoulli", "gaussian"):
            raise ValueError(f"likelihood must be 'bernoulli' or 'gaussian', got {likelihood!r}")
        self.output_dim = int(output_dim)
        self.hidden_units = tuple(int(u) for u in hidden_units)
        self.likelihood = likelihood
        self.hidden = [keras.layers.Dense(u, activation="relu", name=f"dense_{n}")
                       for n, u in enumerate(self.hidden_units)]
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
        return {**super().get_config(), "output_dim": self.output_dim,
                "hidden_units": list(self.hidden_units), "likelihood": self.likelihood}
