"""Keras callbacks for clustering models."""

from __future__ import annotations

import csv
import logging
import math
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from dcgmm_tf import metrics, records, runtime, starts
from dcgmm_tf.config import LATENT_CLASS_STARTS
from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.storage import read_checked, write_atomically


class ClusteringMetrics(keras.callbacks.Callback):
    """Adds ACC / NMI / ARI of the clusters ``records.predict_clusters(model, x)`` against ``y`` to the epoch logs.

    Runs every ``every`` epochs and after the last one (NaN in between); place it before ``CSVLogger`` / ``TensorBoard``
    in the callback list so they record the values. Also logs ``elapsed_seconds`` since training began.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray, every: int = 1, prefix: str = "test_", batch_size: int = 1024):
        super().__init__()
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.x, self.y, self.every, self.prefix, self.batch_size = x, np.asarray(y), every, prefix, batch_size
        self.clusters: np.ndarray | None = None  # the predicted clusters of the last evaluation
        self._start = None

    def on_train_begin(self, logs=None):
        self._start = time.perf_counter()
        self.clusters = None

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        logs["elapsed_seconds"] = time.perf_counter() - self._start
        last = self.params is not None and epoch + 1 == self.params.get("epochs")
        if (epoch + 1) % self.every and not last:
            scores = dict.fromkeys(("acc", "nmi", "ari"), float("nan"))  # keeps the CSV columns fixed
        else:
            self.clusters = records.predict_clusters(self.model, self.x, self.batch_size)
            scores = metrics.clustering_scores(self.y, self.clusters)
        for name, value in scores.items():
            logs[self.prefix + name] = value


class EpochProgress(keras.callbacks.ProgbarLogger):
    """Keras' progress bar and epoch line, without the values an epoch does not have.

    :class:`ClusteringMetrics` writes NaN test scores on the epochs it does not evaluate, so that the history's
    columns stay fixed; this logger leaves them out of the console (the history files keep them). Keras uses it in
    place of its own progress logger when it is among ``fit``'s callbacks.
    """

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, {k: v for k, v in (logs or {}).items() if not _is_nan(v)})


def _is_nan(value) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return False


class ClusterRestart(keras.callbacks.Callback):
    """Restarts the mixture from the current embeddings every ``every`` epochs and after the last epoch (also one
    that a callback before it, such as :class:`StableClusters`, made the last by stopping the training).

    After epochs ``every``, ``2 every``, ... and after the last one, the cluster means and variances are set to the
    start of ``strategy`` (see :func:`dcgmm_tf.starts.init_clusters`) on mu(x) of the training data ``x``,
    which the constraints have shaped in the epochs before (``latent_class``'s EM from ``em_starts`` random starts
    and the current clusters). Place it before the callbacks that save or evaluate the model.
    """

    def __init__(
        self,
        x: np.ndarray,
        constraints: ConstraintSet,
        every: int,
        strategy: str = "latent_class",
        num_components: int | None = None,
        seed: int = 0,
        em_starts: int = LATENT_CLASS_STARTS,
    ):
        super().__init__()
        starts.check_strategy(strategy)
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.x, self.constraints, self.every, self.strategy = x, constraints, every, strategy
        self.num_components, self.seed, self.em_starts = num_components, seed, em_starts

    def on_epoch_end(self, epoch, logs=None):
        done, total = epoch + 1, (self.params or {}).get("epochs", 0)
        if done % self.every and done != total and not self.model.stop_training:
            return
        began = time.perf_counter()
        starts.init_clusters(
            self.model,
            self.x,
            self.constraints,
            self.strategy,
            self.num_components,
            self.seed + done,
            em_starts=self.em_starts,
        )
        seconds = time.perf_counter() - began
        logging.info("mixture restarted by %s after epoch %d in %.1f s", self.strategy, done, seconds)


class StableClusters(keras.callbacks.Callback):
    """Stops the training once the clusters of the training samples hold still: when at most a share ``tol`` of
    ``x`` changed cluster (argmax p(c|x), against the epoch before) in each of ``patience`` epochs in a row.

    Place it before a :class:`ClusterRestart`, which then restarts after the epoch it stops at as after the last
    one. The history's length says how many epochs ran.
    """

    def __init__(self, x: np.ndarray, tol: float, patience: int):
        super().__init__()
        if not 0 <= tol < 1:
            raise ValueError(f"tol must be in [0, 1), got {tol}")
        if patience < 1:
            raise ValueError(f"patience must be >= 1, got {patience}")
        self.x, self.tol, self.patience = x, tol, patience
        self._labels: np.ndarray | None = None
        self._still = 0  # epochs in a row with at most tol of the clusters changed

    def on_train_begin(self, logs=None):
        self._labels, self._still = None, 0

    def on_epoch_end(self, epoch, logs=None):
        labels = self.model.cluster_probabilities(self.x).argmax(-1)
        if self._labels is not None:
            changed = np.count_nonzero(labels != self._labels) / len(labels)
            self._still = self._still + 1 if changed <= self.tol else 0
        self._labels = labels
        if self._still >= self.patience and not self.model.stop_training:
            self.model.stop_training = True
            logging.info("the clusters held still for %d epochs: stopped after epoch %d", self.patience, epoch + 1)


class NonFiniteLossGuard(keras.callbacks.Callback):
    """Stops training at the first non-finite loss and rolls the model back to its last good weights.

    ``keras.callbacks.TerminateOnNaN`` only stops, leaving NaN weights in the model. This callback checks the
    ``monitor`` value after every compiled call of the training step (every batch, or every
    ``steps_per_execution`` batches; the running mean of the epoch, which turns non-finite with the first
    non-finite batch loss), and then restores the weights and the optimizer state at the end of the last epoch
    with a finite loss (or at the start of training), saves the weights to ``checkpoint_path`` (a
    ``.weights.h5`` file, written atomically) if given, and stops training. ``error`` then holds a message;
    :meth:`raise_if_stopped` raises it. The good state is kept as tensors on the variables' devices: it is
    never copied to the host.
    """

    def __init__(self, checkpoint_path: str | os.PathLike | None = None, monitor: str = "loss"):
        super().__init__()
        if checkpoint_path is not None and not str(checkpoint_path).endswith(".weights.h5"):
            raise ValueError(f"checkpoint_path must end in .weights.h5, got {checkpoint_path}")
        self.checkpoint_path = None if checkpoint_path is None else Path(checkpoint_path)
        self.monitor = monitor
        self.error: str | None = None
        self._epoch = 0
        self._good_state: list[tf.Tensor] | None = None
        self._watched: list = []  # the variables that the good state copies, in its order
        self._good_epoch: int | None = None

    def _variables(self) -> list:
        """The weights of the model and the variables of its optimizer (not the metric trackers, whose values
        still report the failed epoch)."""
        if not self.model.optimizer.built:
            self.model.optimizer.build(self.model.trainable_variables)
        return [*self.model.weights, *self.model.optimizer.variables]

    def on_train_begin(self, logs=None):
        self._watched = variables = self._variables()
        # Copies of the variables' values on their own devices, in one compiled call (as eager ops, one per
        # variable, they cost a short epoch about 8 ms).
        self._snapshot = tf.function(lambda: [tf.identity(tf.convert_to_tensor(v)) for v in variables])
        self.error = None
        with runtime.no_retracing_warning():  # each fit's guard traces its copy once
            self._good_state = self._snapshot()
        self._good_epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        value = (logs or {}).get(self.monitor)
        if self.error is not None or value is None or math.isfinite(float(value)):
            return
        for variable, good in zip(self._watched, self._good_state, strict=True):
            variable.assign(good)
        self.model.stop_training = True
        kept = "the start of training" if self._good_epoch is None else f"the end of epoch {self._good_epoch + 1}"
        self.error = (
            f"the {self.monitor} became {float(value)} in epoch {self._epoch + 1}, batch {batch + 1}; "
            f"training stopped and the model was reset to its weights at {kept}"
        )
        if self.checkpoint_path is not None:
            write_atomically(self.checkpoint_path, self.model.save_weights, checksum=True)
            self.error += f", saved to {self.checkpoint_path}"
        self.error += (
            ". Lower the learning rate, clip the gradients (global_clipnorm, --clipnorm in "
            "experiments/run.py) or lower the constraint weight alpha."
        )
        logging.error("%s", self.error)

    def on_epoch_end(self, epoch, logs=None):
        if self.error is None:
            self._good_state = self._snapshot()
            self._good_epoch = epoch

    def raise_if_stopped(self) -> None:
        """Raises ``FloatingPointError`` with the message if training was stopped by a non-finite loss."""
        if self.error is not None:
            raise FloatingPointError(self.error)


class TrainingBackup(keras.callbacks.Callback):
    """Backs up the whole training state after every epoch so that a killed ``fit`` can resume.

    Like ``keras.callbacks.BackupAndRestore``, but the backup holds every variable of the model (including
    the state of its random-number generators) and of its optimizer, in one file per epoch written atomically
    (``epoch-00007.npz``): a process killed while writing leaves the previous backup intact, and the
    weights and the epoch number can never disagree, so a resumed run continues exactly where it stopped.

    Usage: after ``compile``, ``initial_epoch = backup.restore(model)``; pass ``initial_epoch`` to ``fit``
    (and to the data pipeline, whose shuffling depends on the epoch). The backup is deleted when ``fit``
    ends; it is kept when the process dies. ``backup_dir`` must belong to one model configuration.

    Args:
      backup_dir: The folder of the backups.
      keep: How many of the newest backups to keep. Workers of one training killed together may have written
        their last backups one epoch apart: with two kept, they can all resume from the same epoch (see
        :meth:`restore`'s ``agree``).
    """

    def __init__(self, backup_dir: str | os.PathLike, keep: int = 1):
        super().__init__()
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        self.backup_dir = Path(backup_dir)
        self.keep = keep

    @staticmethod
    def _state(model: keras.Model) -> list:
        if not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
        seen, state = set(), []
        for variable in [*model.variables, *model.optimizer.variables]:
            if id(variable) not in seen:
                seen.add(id(variable))
                state.append(variable)
        return state

    def _backups(self) -> list[tuple[int, Path]]:
        """(epoch, path) of the backups present, newest first."""
        found = [(int(p.name[6:-4]), p) for p in self.backup_dir.glob("epoch-*.npz") if p.name[6:-4].isdigit()]
        return sorted(found, reverse=True)

    def restore(self, model: keras.Model, agree: Callable[[list[int]], int] | None = None) -> int:
        """Loads the newest usable backup into ``model`` (compiled) and returns its number of finished epochs
        (0 without one). A damaged backup (not matching its checksum, unreadable, or of another model) is
        reported in one warning and skipped; when none is usable the run starts from its beginning, and says so.

        ``agree`` chooses among the epochs of the usable backups (newest first) the one to resume from, an epoch
        of the list or 0 (the beginning): the workers of one training resume from the same epoch
        (:func:`dcgmm_tf.distribute.common_epoch`)."""
        state = self._state(model)
        shapes = [tuple(v.shape) for v in state]
        backups, usable = self._backups(), {}
        for epoch, path in backups:
            values, problem = read_checked(path, _read_arrays)
            if problem is None and [v.shape for v in values] != shapes:
                problem = "it holds the variables of another model"
            if problem is not None:
                logging.warning("the backup %s is damaged: %s; skipped", path, problem)
                continue
            usable[epoch] = (path, values)
            if agree is None:
                break
        epoch = agree(list(usable)) if agree is not None else next(iter(usable), 0)
        if epoch in usable:
            path, values = usable[epoch]
            for variable, value in zip(state, values):
                variable.assign(value)
            logging.info("resuming training after epoch %d from %s", epoch, path)
            return epoch
        if backups:
            logging.warning("no usable backup in %s: the run starts from its beginning", self.backup_dir)
        return 0

    def on_epoch_end(self, epoch, logs=None):
        if self.model.stop_training:  # stopped early or rolled back: this state is not the epoch's
            return
        arrays = {f"v{k:05d}": keras.ops.convert_to_numpy(v) for k, v in enumerate(self._state(self.model))}

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as f:  # a file object: np.savez would append ".npz" to a name
                np.savez(f, **arrays)

        path = self.backup_dir / f"epoch-{epoch + 1:05d}.npz"
        write_atomically(path, write, checksum=True)
        others = [(number, old) for number, old in self._backups() if number != epoch + 1]
        kept = [old for number, old in others if number < epoch + 1][: self.keep - 1]  # the newest before this one
        for _, old in others:
            if old not in kept:
                old.unlink(missing_ok=True)
                old.with_name(old.name + ".sha256").unlink(missing_ok=True)

    def on_train_end(self, logs=None):
        shutil.rmtree(self.backup_dir, ignore_errors=True)


def _read_arrays(path: Path) -> list[np.ndarray]:
    """The arrays of an ``.npz`` backup in the order they were written."""
    with np.load(path, allow_pickle=False) as f:
        return [f[name] for name in sorted(f.files)]


def trim_history(path: str | os.PathLike, num_epochs: int) -> None:
    """Keeps only the rows of epochs ``< num_epochs`` in a ``CSVLogger`` file (before resuming a run whose
    log may hold epochs after its last backup)."""
    path = Path(path)
    if not path.exists():
        return
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        logging.warning("the history %s is unreadable (%s); it starts again", path, e)
        path.unlink()
        return
    if not rows or "epoch" not in rows[0]:
        logging.warning("the history %s has no header with an epoch column; it starts again", path)
        path.unlink()
        return
    column, kept = rows[0].index("epoch"), [rows[0]]
    for number, row in enumerate(rows[1:], start=2):
        if len(row) == len(rows[0]) and row[column].isdigit():
            if int(row[column]) < num_epochs:
                kept.append(row)
        else:
            logging.warning("the history %s: line %d is damaged (%s); dropped", path, number, ",".join(row)[:80])

    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(kept)

    write_atomically(path, write)
