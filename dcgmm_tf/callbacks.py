"""Keras callbacks for clustering models."""

from __future__ import annotations

import time

import keras
import numpy as np

from dcgmm_tf import metrics


class ClusteringMetrics(keras.callbacks.Callback):
    """Adds ACC / NMI / ARI of ``model.predict(x).argmax(-1)`` against ``y`` to the epoch logs.

    Runs every ``every`` epochs and after the last one (NaN in between); place it before ``CSVLogger`` / ``TensorBoard``
    in the callback list so they record the values. Also logs ``elapsed_seconds`` since training began.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray, every: int = 1, prefix: str = "test_",
                 batch_size: int = 1024):
        super().__init__()
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.x, self.y, self.every, self.prefix, self.batch_size = x, np.asarray(y), every, prefix, batch_size
        self._start = None

    def on_train_begin(self, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        logs["elapsed_seconds"] = time.perf_counter() - self._start
        last = self.params is not None and epoch + 1 == self.params.get("epochs")
        if (epoch + 1) % self.every and not last:
            scores = dict.fromkeys(("acc", "nmi", "ari"), float("nan"))  # keeps the CSV columns fixed
        else:
            y_pred = self.model.predict(self.x, batch_size=self.batch_size, verbose=0).argmax(-1)
            scores = metrics.clustering_scores(self.y, y_pred)
        for name, value in scores.items():
            logs[self.prefix + name] = value
