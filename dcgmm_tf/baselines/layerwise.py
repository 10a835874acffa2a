"""The stacked autoencoder of the DEC-based baselines and its greedy layer-wise pretraining (Xie et al. 2016).

Each encoder layer and its mirrored decoder layer are first trained as a denoising autoencoder (dropout on
the input) on the previous layer's output; the whole autoencoder is then fine-tuned on the mean squared error.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import keras
import numpy as np

from dcgmm_tf.networks import PAPER_HIDDEN_UNITS
from dcgmm_tf.pretraining import load_cached_weights, save_cached_weights
from dcgmm_tf.storage import exclusive


@keras.saving.register_keras_serializable(package="dcgmm_tf")
class StackedAutoencoder(keras.Model):
    """``input -> 500 -> 500 -> 2000 -> latent -> 2000 -> 500 -> 500 -> input`` (ReLU), as in DEC.

    The embedding layer and the output layer are linear.
    """

    def __init__(
        self, input_dim: int, latent_dim: int = 10, hidden_units: Sequence[int] = PAPER_HIDDEN_UNITS, **kwargs
    ):
        super().__init__(**kwargs)
        self.input_dim, self.latent_dim = int(input_dim), int(latent_dim)
        self.hidden_units = tuple(int(u) for u in hidden_units)
        self.encoder = keras.Sequential(
            [keras.layers.Dense(u, activation="relu", name=f"enc_{n}") for n, u in enumerate(self.hidden_units)]
            + [keras.layers.Dense(self.latent_dim, name="embedding")],
            name="encoder",
        )
        self.decoder = keras.Sequential(
            [keras.layers.Dense(u, activation="relu", name=f"dec_{n}") for n, u in enumerate(self.hidden_units[::-1])]
            + [keras.layers.Dense(self.input_dim, name="reconstruction")],
            name="decoder",
        )
        self.build((None, self.input_dim))

    def build(self, input_shape):
        self.encoder.build(input_shape)
        self.decoder.build((None, self.latent_dim))

    def call(self, x, training=False):
        return self.decoder(self.encoder(x, training=training), training=training)

    def get_config(self):
        return {
            **super().get_config(),
            "input_dim": self.input_dim,
            "latent_dim": self.latent_dim,
            "hidden_units": list(self.hidden_units),
        }


def pretrain_layerwise(
    autoencoder: StackedAutoencoder,
    x: np.ndarray,
    *,
    layer_epochs: int = 50,
    finetune_epochs: int = 100,
    batch_size: int = 256,
    dropout: float = 0.2,
    learning_rate: float = 1e-3,
    seed: int = 0,
    cache_path: str | os.PathLike | None = None,
    verbose: int = 0,
) -> bool:
    """Greedy layer-wise denoising pretraining, then end-to-end fine-tuning, both with Adam on the MSE.

    Reuses ``cache_path`` (``.weights.h5``) if it exists, and writes it otherwise; returns True on a cache hit.
    """
    if layer_epochs < 0 or finetune_epochs < 0:
        raise ValueError(f"epochs must be >= 0, got {layer_epochs} and {finetune_epochs}")
    with exclusive(cache_path):  # processes sharing the cache: one pretrains, the others then load its file
        if load_cached_weights(autoencoder, cache_path):
            return True
        _pretrain(autoencoder, x, layer_epochs, finetune_epochs, batch_size, dropout, learning_rate, seed, verbose)
        save_cached_weights(autoencoder, cache_path)
    return False


def _pretrain(
    autoencoder: StackedAutoencoder,
    x: np.ndarray,
    layer_epochs: int,
    finetune_epochs: int,
    batch_size: int,
    dropout: float,
    learning_rate: float,
    seed: int,
    verbose: int,
) -> None:
    """The layer-wise denoising stages, then the fine-tuning of the whole autoencoder."""
    h = np.asarray(x, np.float32)
    if layer_epochs:
        for encode, decode in zip(autoencoder.encoder.layers, autoencoder.decoder.layers[::-1]):
            stage = keras.Sequential([keras.layers.Dropout(dropout, seed=seed), encode, decode])
            stage.compile(optimizer=keras.optimizers.Adam(learning_rate), loss="mse")
            stage.fit(h, h, batch_size=batch_size, epochs=layer_epochs, shuffle=True, verbose=verbose)
            h = np.concatenate([keras.ops.convert_to_numpy(encode(h[s : s + 4096])) for s in range(0, len(h), 4096)])
    if finetune_epochs:
        autoencoder.compile(optimizer=keras.optimizers.Adam(learning_rate), loss="mse")
        autoencoder.fit(x, x, batch_size=batch_size, epochs=finetune_epochs, shuffle=True, verbose=verbose)
