"""A labelling session: a person answers the pairs that active selection asks about, and the model trains between
rounds, as :func:`dcgmm_tf.active_loop.simulate` does with the labels answering.

Round 0 asks ``schedule.start_pairs`` random pairs. The first retrain is the start of the simulation (pretraining,
the start of the mixture and ``schedule.start_epochs`` of training on the answers); retrain ``k`` >= 1 is round
``k``'s training (``schedule.round_epochs`` more epochs from the current weights). After retrain ``k`` the session
asks the pairs of round ``k + 1``: as many as take the answers to ``schedule.budgets[k]``. With every pair answered
from the labels, the scores after each retrain are those of ``simulate`` with the same schedule, to the last digit.

The folder keeps the questions and answers (:mod:`dcgmm_tf.labelling.answers`), the weights after each retrain and
``state.json``; a session opened again on the folder goes on where the last one stopped.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import keras
import numpy as np

from dcgmm_tf import metrics, pair_selection
from dcgmm_tf.active_loop import ActiveSchedule, round_pairs, train_round, trained_start
from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.constraints import ConstraintSet, default_alpha, random_pairs
from dcgmm_tf.data import DataSplits
from dcgmm_tf.labelling.answers import AnswerBook
from dcgmm_tf.model import DCGMM
from dcgmm_tf.pretraining import load_cached_weights, save_cached_weights
from dcgmm_tf.recipe import make_model, prepare_run, training_pairs
from dcgmm_tf.records import predict_clusters
from dcgmm_tf.runtime import precision_policy, process_seeds
from dcgmm_tf.storage import write_atomically


@dataclasses.dataclass
class Progress:
    """What the background training is doing: ``phase`` is "idle", "starting" (pretraining and the start),
    "training", "suggesting" or "failed" (``message`` says why)."""

    phase: str = "idle"
    epoch: int = 0
    epochs: int = 0
    message: str = ""


class _EpochCounter(keras.callbacks.Callback):
    def __init__(self, progress: Progress):
        super().__init__()
        self.progress = progress

    def on_epoch_end(self, epoch, logs=None):
        self.progress.epoch += 1


class LabellingSession:
    """The state of one labelling run, safe to use from several threads (the web page's requests).

    Args:
      config: The run's settings (method dcgmm); ``config.alpha`` is the confidence of every answer (default 1e4).
      data: The data set; its test labels, where it has them, score each retrain.
      folder: Where the questions, answers, weights and state are kept.
      schedule: The pairs per round and the epochs of the start and of each round.
      strategy: The selection strategy of :mod:`dcgmm_tf.pair_selection` that asks after the first round.
      runtime: Threads, cache and batch sizes of the training.
      typical: How many typical members of each cluster the page shows.

    Raises:
      ValueError: On another method, an unknown strategy, or a damaged folder.
    """

    def __init__(
        self,
        config: RunConfig,
        data: DataSplits,
        folder: str | os.PathLike,
        schedule: ActiveSchedule = ActiveSchedule(),
        strategy: str = "anchor",
        runtime: RuntimeConfig = RuntimeConfig(),
        typical: int = 8,
    ):
        if config.method != "dcgmm":
            raise ValueError(f"labelling needs method dcgmm, got {config.method}")
        if strategy not in pair_selection.SELECTION_STRATEGIES:
            raise ValueError(f"strategy must be one of {pair_selection.SELECTION_STRATEGIES}, got {strategy!r}")
        if config.input_features != "pixels":
            raise ValueError(
                f"labelling shows the samples the network reads, so it needs input_features pixels, "
                f"got {config.input_features} (a person cannot compare two HOG vectors)"
            )
        self.config, self.schedule, self.strategy, self.runtime, self.typical = (
            config,
            schedule,
            strategy,
            runtime,
            typical,
        )
        self.run = prepare_run(config, data, constraints=lambda y: ConstraintSet.empty(len(y)))
        self.folder = Path(folder)
        self.weight = config.alpha or default_alpha(0.0)
        self.book = AnswerBook(self.folder, len(self.run.inputs.x_train), self.weight)
        self.progress = Progress()
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._model: DCGMM | None = None
        self.state = self._read_state()
        if not len(self.book.pairs):
            self.book.ask(random_pairs(len(self.run.inputs.x_train), schedule.start_pairs, config.seed), 0)

    @property
    def x_train(self) -> np.ndarray:
        return self.run.data.x_train

    @property
    def budget(self) -> int:
        """The number of answers the schedule asks for in all."""
        return self.schedule.budgets[-1]

    @property
    def state_path(self) -> Path:
        return self.folder / "state.json"

    def _read_state(self) -> dict[str, Any]:
        if not self.state_path.exists():
            return {"retrains": 0, "rounds": [], "clusters": [], "weights": None}
        try:
            state = json.loads(self.state_path.read_text())
            int(state["retrains"]), list(state["rounds"]), list(state["clusters"])
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{self.state_path} is damaged: {error}") from None
        return state

    # --- answers --------------------------------------------------------------------------------------------

    def snapshot(self, annotator: str = "") -> dict[str, Any]:
        """Everything the page shows ``annotator``: the next pair, the counts, the pairs people disagree on, the
        training's progress, scores and clusters."""
        with self._lock:
            position = self.book.next_question()
            pair = None if position is None else [int(v) for v in self.book.pairs[position]]
            return {
                "pair": pair,
                "position": position,
                "answered": self.book.num_answered,
                "skipped": self.book.num_skipped,
                "budget": self.budget,
                "retrains": int(self.state["retrains"]),
                "training": dataclasses.asdict(self.progress),
                "rounds": self.state["rounds"],
                "clusters": self.state["clusters"],
                "disagreements": self.book.disagreements(),
                "can_undo": any(vote.annotator == annotator for vote in self.book.votes),
            }

    def answer(self, i: int, j: int, answer: str, annotator: str = "") -> None:
        """Records ``annotator``'s ``answer`` ("same", "different" or "skip") to the pair ``(i, j)``: the pair asked
        now, or one somebody else decided (see :meth:`AnswerBook.record`).

        Raises:
          AnswerError: If ``annotator`` answered ``(i, j)`` already (in another tab, say), or it is not asked yet.
          ValueError: On an unknown answer or annotator name.
          DiskFullError: When the answer cannot be written; it is not recorded.
        """
        with self._lock:
            self.book.record(i, j, answer, annotator)

    def undo(self, annotator: str = "") -> tuple[int, int] | None:
        """Forgets ``annotator``'s last answer (or skip); returns its pair, None when there is none."""
        with self._lock:
            return self.book.undo(annotator)

    # --- training -------------------------------------------------------------------------------------------

    def retrain(self, wait: bool = False) -> None:
        """Trains on the answers so far in a background thread, then asks the next round's pairs (see the module
        docstring); ``wait`` joins the thread (and raises what failed in it).

        Raises:
          RuntimeError: If a training is running already or no pair is answered yet.
        """
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                raise RuntimeError("a training is running already")
            if not self.book.num_answered:
                raise RuntimeError("answer at least one pair before training")
            constraints = self.book.constraints()
            first = self.state["retrains"] == 0
            epochs = self.schedule.start_epochs if first else self.schedule.round_epochs
            self.progress = Progress("starting" if first else "training", epochs=epochs)
            self._thread = threading.Thread(target=self._train, args=(constraints,), name="retrain", daemon=True)
            self._thread.start()
        if wait:
            self._thread.join()
            if self.progress.phase == "failed":
                raise RuntimeError(self.progress.message)

    def _train(self, constraints: ConstraintSet) -> None:
        try:
            with precision_policy(self.config.mixed_precision):
                self._train_and_ask(constraints)
            self.progress.phase = "idle"
        except Exception as error:  # the page shows it; the log has the traceback
            logging.exception("retraining failed")
            self.progress.message = f"{type(error).__name__}: {error}"
            self.progress.phase = "failed"

    def _train_and_ask(self, constraints: ConstraintSet) -> None:
        retrains = int(self.state["retrains"])
        config, schedule, x_train = self.config, self.schedule, self.run.inputs.x_train
        counter = [_EpochCounter(self.progress)]
        answered, constraints = constraints, training_pairs(config, x_train, constraints)
        if retrains == 0:
            model = trained_start(
                config,
                dataclasses.replace(self.run, constraints=constraints),
                self.runtime,
                schedule.start_epochs,
                counter,
            )
            epochs = schedule.start_epochs
        else:
            model = self._current_model()
            train_round(model, config, x_train, constraints, self.runtime, retrains, schedule.round_epochs, counter)
            epochs = self.state["rounds"][-1]["epochs"] + schedule.round_epochs
        self._model = model
        row = {"retrain": retrains, "num_pairs": len(answered), "epochs": epochs, **self._scores(model)}
        clusters = self._typical_members(model)
        self.progress.phase = "suggesting"
        number = retrains + 1  # the round whose pairs come next
        if number <= len(schedule.budgets):
            with self._lock:
                pending = len(self.book.pairs) - self.book.num_decided
                wanted = schedule.budgets[number - 1] - self.book.num_answered - pending
            if wanted > 0:
                known = self.book.constraints()  # with the answers given while it trained
                pairs = round_pairs(model, config, x_train, known, wanted, self.strategy, number, self.runtime)
                with self._lock:
                    self.book.ask(pairs, number)  # a pair asked before (skipped, say) is not asked again
        weights = self.folder / f"model-retrain{retrains}.weights.h5"
        save_cached_weights(model, weights)
        with self._lock:
            self.state = {
                "retrains": retrains + 1,
                "rounds": [*self.state["rounds"], row],
                "clusters": clusters,
                "weights": weights.name,
            }
            text = json.dumps(self.state, indent=1)
            write_atomically(self.state_path, lambda tmp: tmp.write_text(text))
        for old in self.folder.glob("model-retrain*.weights.h5*"):  # the weights of earlier retrains
            if not old.name.startswith(weights.name):
                old.unlink(missing_ok=True)
        logging.info("retrain %d on %d answers: %s", retrains, len(answered), row)

    def _current_model(self) -> DCGMM:
        if self._model is not None:
            return self._model
        x_train = self.run.inputs.x_train
        with process_seeds(self.config.seed):  # its initial weights are replaced; the server's random state stays
            model = make_model(
                self.config, x_train.shape[1:], self.run.data.likelihood, self.run.num_clusters, self.config.seed
            )
        path = self.folder / str(self.state["weights"])
        if not load_cached_weights(model, path):
            raise RuntimeError(f"the weights of the last retrain, {path}, cannot be loaded (see the log)")
        return model

    def _scores(self, model: DCGMM) -> dict[str, float]:
        _, _, x_test, y_test = self.run.inputs
        if not len(x_test):
            return {}
        return metrics.clustering_scores(y_test, predict_clusters(model, x_test, self.runtime.eval_batch_size))

    def _typical_members(self, model: DCGMM) -> list[list[int]]:
        """Per cluster, the members nearest its mean (in the metric of its variances), most typical first."""
        x_train, batch_size = self.run.inputs.x_train, self.runtime.eval_batch_size
        z = model.embed(x_train, batch_size)
        assigned = predict_clusters(model, x_train, batch_size)
        means, variances = np.asarray(model.cluster_means), np.asarray(model.cluster_variances)
        clusters = []
        for k in range(len(means)):
            members = np.flatnonzero(assigned == k)
            distances = (((z[members] - means[k]) ** 2) / variances[k]).sum(1)
            clusters.append(members[np.argsort(distances, kind="stable")][: self.typical].tolist())
        return clusters
