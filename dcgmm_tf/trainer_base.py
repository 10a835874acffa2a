"""What every trainer shares: the trained-model record, the cache files and cluster predictions."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import keras
import numpy as np

from dcgmm_tf.config import RuntimeConfig
from dcgmm_tf.data.paths import REPO_DATA_DIR
from dcgmm_tf.model import DCGMM


@dataclasses.dataclass
class TrainedModel:
    """A trained model, its per-epoch history, the test accuracy of its initial clustering (NaN if none) and, where
    the training scored the test split after its last epoch, the predicted cluster of each test sample."""

    model: Any
    history: dict[str, list]
    start_acc: float
    test_clusters: np.ndarray | None = None


def cache_folder(runtime: RuntimeConfig) -> Path | None:
    """``runtime.cache_dir`` (default ``data/cache`` of the repository); None when ``runtime.cache`` is off."""
    if not runtime.cache:
        return None
    return Path(runtime.cache_dir) if runtime.cache_dir else REPO_DATA_DIR / "cache"


def cache_path(runtime: RuntimeConfig, name: str) -> Path | None:
    """The cache file ``name`` in :func:`cache_folder`; None when ``runtime.cache`` is off."""
    folder = cache_folder(runtime)
    return None if folder is None else folder / name


def cache_note(cached: bool, path: Path | None) -> str:
    """Where pretrained weights came from, for the log."""
    return f"loaded from {path}" if cached else f"saved to {path}" if path else "not cached"


def predict_clusters(model: Any, x: np.ndarray, batch_size: int = 1024) -> np.ndarray:
    """The cluster of each row of ``x``: a PCKMeans prediction, or the argmax of a Keras model's output."""
    if isinstance(model, DCGMM):
        return model.cluster_probabilities(x, batch_size).argmax(-1)
    if isinstance(model, keras.Model):
        return model.predict(x, batch_size=batch_size, verbose=0).argmax(-1)
    return model.predict(x)
