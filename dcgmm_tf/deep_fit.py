"""The estimator's deep fits: the recipe's steps (:mod:`dcgmm_tf.recipe`) for MLP models of scaled vectors.

:class:`DeepFit` holds what the estimator resolved for its data (the network, the likelihood, the schedule, the
seed) and makes from it the models the estimator needs: the pretrained autoencoder, each fold's tuned embedding and
each probe of ``n_clusters="auto"``, and the fit itself. :meth:`DeepFit.train_starts` trains one model per start, as
scikit-learn's ``n_init`` does, and returns a :class:`StartsResult` with the kept fit (the lowest negative C-ELBO,
:func:`dcgmm_tf.recipe.fit_loss`) and what each start gave.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Sequence

import numpy as np

from dcgmm_tf import recipe, starts
from dcgmm_tf.cluster_count import ClusterCount
from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.fitting import FitSchedule
from dcgmm_tf.model import DCGMM
from dcgmm_tf.networks import PAPER_HIDDEN_UNITS, MLPDecoder, MLPEncoder
from dcgmm_tf.pretraining import start_mixture
from dcgmm_tf.sizing import EstimatorSchedule, probe_schedule

# The estimator's learning rate decays by the paper's staircase (x0.9 every fifth of the run), where the runner's
# default is a cosine: the estimator's schedule was measured on small and tabular data with it (docs/your-data.md).
LR_SCHEDULE = "staircase"


def mlp_model(
    num_features: int, num_clusters: int, latent_dim: int, hidden_units: tuple[int, ...], likelihood: str, seed: int
) -> DCGMM:
    """A DC-GMM for vectors of ``num_features`` with an MLP encoder of ``hidden_units`` (the decoder mirrors it);
    the paper's network is the model's own default one. Its initial weights follow Keras' global seed."""
    networks = {}
    if tuple(hidden_units) != PAPER_HIDDEN_UNITS:
        networks = {
            "encoder": MLPEncoder(latent_dim, hidden_units, name="encoder"),
            "decoder": MLPDecoder(num_features, tuple(hidden_units)[::-1], likelihood, name="decoder"),
        }
    return DCGMM(
        (num_features,), num_clusters=num_clusters, latent_dim=latent_dim, likelihood=likelihood, seed=seed, **networks
    )


@dataclasses.dataclass(frozen=True, eq=False)  # holds arrays: compared by identity
class StartsResult:
    """The fits of :meth:`DeepFit.train_starts`.

    Attributes:
      model: The kept model.
      history: Its per-epoch loss terms.
      start: Its start: "embedding" (``cluster_init`` on the embedding) or "input" (the input GMM's clusters).
      losses: The negative C-ELBO per sample of each start's fit (empty with one start).
      labels: Each start's clusters of the training samples.
    """

    model: DCGMM
    history: dict[str, list]
    start: str
    losses: dict[str, float]
    labels: dict[str, np.ndarray]

    @property
    def kept_labels(self) -> np.ndarray:
        """The kept model's clusters of the training samples."""
        return self.labels[self.start]


@dataclasses.dataclass(frozen=True, eq=False)  # holds arrays: compared by identity
class DeepFit:
    """The estimator's settings, resolved for the scaled training input ``x``, and the fits they make.

    Attributes:
      x: The scaled training input [N, F].
      seed: The seed of the initialisation, pretraining, starts and batches.
      schedule: The schedule (:func:`dcgmm_tf.sizing.fit_schedule`).
      latent_dim: The embedding's dimension.
      hidden_units: The encoder's hidden widths.
      likelihood: The decoder likelihood.
      learning_rate: The initial Adam learning rate.
      cluster_init: The start of the mixture on the embedding.
      pair_tuning_weight: The weight of the pair term in the tuning with the pairs.
      choice_weights: With K to choose: the candidate GMMs' weights, "equal" or "fitted".
      choice_splits: With K to choose: random splits of the answers into folds.
      choice_rule: With K to choose: "one_se" or "best".
      probe_epochs: With K to choose: epochs of each probe, "auto" or 0 (no probes).
      keep_optimizer: Keep the optimizer's state on the kept model.
      verbose: Keras' progress output.
      tol: Stop a fit once at most this share of the samples changed cluster in each of ``patience`` epochs in a
        row (None: every epoch of the schedule).
      patience: See ``tol``.
    """

    x: np.ndarray
    seed: int
    schedule: EstimatorSchedule
    latent_dim: int
    hidden_units: tuple[int, ...]
    likelihood: str
    learning_rate: float
    cluster_init: str
    pair_tuning_weight: float
    choice_weights: str = "equal"
    choice_splits: int = 1
    choice_rule: str = "one_se"
    probe_epochs: int | str = 0
    keep_optimizer: bool = False
    verbose: int = 0
    tol: float | None = None
    patience: int = 10

    def builder(self, num_clusters: int) -> Callable[[int], DCGMM]:
        """Makes the model of ``num_clusters`` clusters from a seed; the library calls it under that seed's
        :func:`dcgmm_tf.runtime.process_seeds`, so the initial weights follow the seed."""
        return functools.partial(
            mlp_model, self.x.shape[1], num_clusters, self.latent_dim, self.hidden_units, self.likelihood
        )

    def pretrained(self, num_clusters: int) -> DCGMM:
        """A model with ``num_clusters`` clusters after its autoencoder pretraining on ``x``."""
        return recipe.pretrained_model(
            self.builder(num_clusters),
            self.x,
            seed=self.seed,
            epochs=self.schedule.pretrain_epochs,
            batch_size=self.schedule.batch_size,
            name="estimator",
            cache_dir=None,
            verbose=self.verbose,
        )

    def on_autoencoder(self, num_clusters: int, pretrained: DCGMM) -> DCGMM:
        """A model with ``num_clusters`` clusters on the autoencoder of ``pretrained`` (of any K)."""
        return recipe.with_autoencoder(self.builder(num_clusters), self.seed, pretrained)

    def tune(self, model: DCGMM, pairs: ConstraintSet, epochs: int) -> None:
        """Tunes ``model``'s autoencoder with ``pairs`` for ``epochs`` epochs (:func:`dcgmm_tf.recipe.tune`)."""
        recipe.tune(
            model,
            self.x,
            pairs,
            epochs=epochs,
            weight=self.pair_tuning_weight,
            seed=self.seed,
            batch_size=self.schedule.batch_size,
        )

    def fold_embedding(
        self, pretrained: DCGMM, spread: Callable[[ConstraintSet], ConstraintSet]
    ) -> Callable[[ConstraintSet], np.ndarray] | None:
        """The choice of K's ``fold_embedding``: a copy of ``pretrained`` tuned with a fold's training answers
        (``spread``) for ``choice_tuning_epochs``; None without those epochs (the pretrained embedding)."""
        if not self.schedule.choice_tuning_epochs:
            return None

        def tuned_embedding(pairs: ConstraintSet) -> np.ndarray:
            model = self.on_autoencoder(2, pretrained)
            self.tune(model, spread(pairs), self.schedule.choice_tuning_epochs)
            return model.embed(self.x)

        return tuned_embedding

    def probe(self, pretrained: DCGMM) -> Callable[[int, ConstraintSet], DCGMM] | None:
        """The choice of K's probe: K clusters on the ``pretrained`` autoencoder fitted with the given pairs on
        :func:`dcgmm_tf.sizing.probe_schedule` (:func:`dcgmm_tf.cluster_count.probe_num_clusters`); None for
        ``probe_epochs`` 0 (no probes)."""
        if self.probe_epochs == 0:
            return None
        schedule = probe_schedule(self.schedule, len(self.x), self.probe_epochs)

        def train_probe(num_clusters: int, pairs: ConstraintSet) -> DCGMM:
            model = self.on_autoencoder(num_clusters, pretrained)
            self.tune(model, pairs, schedule.pair_tuning_epochs)
            self.fit(model, pairs, schedule)
            return model

        return train_probe

    def chosen_clusters(
        self,
        answers: ConstraintSet,
        candidates: Sequence[int],
        spread: Callable[[ConstraintSet], ConstraintSet],
    ) -> tuple[DCGMM, ClusterCount]:
        """K chosen among ``candidates`` from the ``answers`` by :func:`dcgmm_tf.recipe.choose_clusters`, the
        runner's choice, on the embedding of a model pretrained here, with each fold's embedding tuned
        (:meth:`fold_embedding`) and probes (:meth:`probe`) where the schedule and ``probe_epochs`` ask for them.

        Args:
          answers: The answered pairs.
          candidates: The values of K to choose from.
          spread: Turns answers into the pairs trained with (spread to neighbours).

        Returns:
          The pretrained model (its autoencoder serves the fit at the chosen K) and the choice.
        """
        pretrained = self.pretrained(2)
        count = recipe.choose_clusters(
            pretrained.embed(self.x),
            answers,
            self.x,
            candidates,
            seed=self.seed,
            weights=self.choice_weights,
            splits=self.choice_splits,
            rule=self.choice_rule,
            fold_embedding=self.fold_embedding(pretrained, spread),
            train_probe=self.probe(pretrained),
            spread=spread,
        )
        return pretrained, count

    def start(self, model: DCGMM, pairs: ConstraintSet, input_clusters: np.ndarray | None = None) -> str:
        """Starts ``model``'s mixture: ``cluster_init``'s start on the embedding, or, given ``input_clusters``,
        those clusters of the samples moment-matched into the embedding; returns the strategy of its restarts."""
        # One cluster is the trivial clustering: the paper's start, no restarts.
        strategy = self.cluster_init if model.num_clusters > 1 else "gmm"
        if input_clusters is not None:
            z = model.embed(self.x)
            model.set_cluster_parameters(
                *starts.moment_match(z, input_clusters, model.num_clusters, 2 * model.min_variance)
            )
        else:
            start_mixture(model, self.x, strategy, pairs, seed=self.seed)
        return strategy

    def train(
        self, model: DCGMM, pairs: ConstraintSet, schedule: EstimatorSchedule, strategy: str, reuse_step: bool = False
    ) -> dict[str, list]:
        """Trains the started ``model`` on ``schedule``, restarting its mixture by ``strategy``; with ``reuse_step``
        in the step that ``model`` was last trained in (:func:`dcgmm_tf.fitting.fit_mixture`). Returns the history."""
        fit = FitSchedule(
            schedule.epochs,
            batch_size=schedule.batch_size,
            seed=self.seed,
            learning_rate=self.learning_rate,
            lr_decay_epochs=schedule.lr_decay_epochs,
            lr_schedule=LR_SCHEDULE,
        )
        return recipe.fit(
            model,
            self.x,
            pairs,
            fit,
            start=strategy,
            restart_every=schedule.restart_every,
            seed=self.seed,
            verbose=self.verbose,
            check_inputs=False,
            reuse_step=reuse_step,
            tol=self.tol,
            patience=self.patience,
        )

    def fit(
        self,
        model: DCGMM,
        pairs: ConstraintSet,
        schedule: EstimatorSchedule,
        input_clusters: np.ndarray | None = None,
    ) -> dict[str, list]:
        """The recipe's steps after the tuning with the pairs (:meth:`tune`) of ``model``: the start of its mixture
        (:meth:`start`) and the fit on ``schedule`` (:meth:`train`); returns the history."""
        return self.train(model, pairs, schedule, self.start(model, pairs, input_clusters))

    def train_starts(
        self,
        pairs: ConstraintSet,
        num_clusters: int,
        pretrained: DCGMM | None,
        input_clusters: np.ndarray | None,
    ) -> StartsResult:
        """One fit per start, like scikit-learn's ``n_init``: from ``cluster_init`` on the embedding and, given
        ``input_clusters`` (the input GMM's clusters of the samples) and K > 1, from those; the kept fit is the one
        of the lowest negative C-ELBO on ``x`` and ``pairs``, the first on a tie. The starts share one tuning with
        the pairs (:meth:`tune`), which depends on the autoencoder, the pairs and the seed alone, and train one after
        the other in one model and one compiled step, each exactly as in a model of its own.

        Args:
          pairs: The pairs to train with.
          num_clusters: K.
          pretrained: A model of any K pretrained on ``x`` whose autoencoder every start takes (None: pretrained
            here).
          input_clusters: The clusters of the second start, or None for one start.

        Returns:
          The fits.
        """
        model = self.pretrained(num_clusters) if pretrained is None else self.on_autoencoder(num_clusters, pretrained)
        self.tune(model, pairs, self.schedule.pair_tuning_epochs)
        clusters = {"embedding": None}
        if input_clusters is not None and num_clusters > 1:
            clusters["input"] = input_clusters
        # The starts train one after the other in one model, the second from the weights the first started from
        # and a new sampling stream, as a copy made before the first fit would (and in the step traced for it).
        begin, last = model.get_weights(), list(clusters)[-1]
        histories, losses, labels, ends = {}, {}, {}, {}
        for start, start_clusters in clusters.items():
            if histories:
                model.set_weights(begin)
                model.reseed(self.seed)
            strategy = self.start(model, pairs, start_clusters)
            histories[start] = self.train(model, pairs, self.schedule, strategy, reuse_step=bool(histories))
            labels[start] = model.cluster_probabilities(self.x).argmax(-1)
            if len(clusters) > 1:
                losses[start] = recipe.fit_loss(model, self.x, pairs)
            if start != last:  # the model trains on from here: keep where this fit ended
                ends[start] = [variable.numpy() for variable in _fit_variables(model)]
        kept = min(losses, key=losses.get) if losses else "embedding"  # the first of the lowest
        if losses:
            logging.info("kept the fit from the %s start (negative C-ELBO %s)", kept, losses)
        if kept != last:
            for variable, value in zip(_fit_variables(model), ends[kept], strict=True):
                variable.assign(value)
        if not self.keep_optimizer:
            # Its moments are twice the weights' size; the model predicts without them (and unpickles uncompiled).
            model.optimizer, model.compiled = None, False
        return StartsResult(model, histories[kept], kept, losses, labels)


def _fit_variables(model: DCGMM) -> list:
    """What a fit of ``model`` changes: its weights, its sampling stream and its optimizer's state."""
    return [*model.weights, model.seed_generator.state, *model.optimizer.variables]
