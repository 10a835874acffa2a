"""DC-GMM as a scikit-learn estimator: ``DCGMMClustering(n_clusters=3).fit(X, ml=[(0, 1)], cl=[(0, 2)])``.

The estimator trains through the runner's recipe (:mod:`dcgmm_tf.recipe`: ``pretrained_model``, ``tune``,
``start_mixture``, ``fit``). What is its own: the scaling of its input, a schedule sized to the data
(:func:`fit_schedule`), and the ``fit``/``predict`` contract. ``clone``, ``Pipeline`` and ``GridSearchCV`` work as
for any scikit-learn clusterer; the fitted Keras model is ``model_`` (save it with ``model_.save("m.keras")``).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import numbers
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.mixture import GaussianMixture
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from dcgmm_tf import paired_mixture, recipe, starts, validation
from dcgmm_tf.cluster_count import check_candidates, choose_num_clusters, probe_num_clusters
from dcgmm_tf.config import START_STRATEGIES, RunConfig, check_field
from dcgmm_tf.constraints import ConstraintSet, as_constraint_set, default_alpha
from dcgmm_tf.fitting import FitSchedule
from dcgmm_tf.model import DCGMM
from dcgmm_tf.networks import PAPER_HIDDEN_UNITS, MLPDecoder, MLPEncoder
from dcgmm_tf.pretraining import start_mixture

_RUNNER_DEFAULTS = RunConfig.__dataclass_fields__
SCALINGS = ("auto", "none")
MIN_TRAIN_STEPS = 3000  # the "auto" schedule trains for at least this many steps ...
MIN_PRETRAIN_STEPS = 600  # ... and pretrains for at least this many
PAIR_TUNING_STEPS = 1200  # "auto" tuning with the pairs: about the runner's 5 epochs of Fashion-MNIST (1,175 steps)
TABLE_FEATURES = 50  # hidden_units="auto": data of at most this many features get the small network ...
TABLE_HIDDEN_UNITS = (64, 64)  # ... and the rest the paper's, made for 784 pixels
# input_fallback's score weighs the pairs at this many times the pairs per training sample of their weight (at most
# their full weight; fallback_pair_scale): 3e-3 at one pair per ten samples, a sure answer (1e4) then weighing 30
FALLBACK_PAIR_RATE = 0.03
# The estimator's learning rate decays by the paper's staircase (x0.9 every fifth of the run), where the runner's
# default is a cosine: the estimator's schedule was measured on small and tabular data with it (docs/your-data.md).
LR_SCHEDULE = "staircase"


@dataclasses.dataclass(frozen=True)
class EstimatorSchedule:
    """The schedule that :class:`DCGMMClustering` resolved for its data (``schedule_``).

    Attributes:
      batch_size: Training and pretraining batch size.
      epochs: Training epochs.
      pretrain_epochs: Pretraining epochs.
      restart_every: Epochs between restarts of the mixture (a tenth of the run).
      lr_decay_epochs: Epochs between decays of the learning rate by 0.9 (a fifth of the run).
      pair_tuning_epochs: Epochs of tuning the autoencoder with the pairs before the start (0: none).
      choice_tuning_epochs: With ``n_clusters="auto"``: epochs of tuning each fold's embedding with that fold's
        answers before K is chosen on it (0: the choice on the pretrained embedding).
    """

    batch_size: int
    epochs: int
    pretrain_epochs: int
    restart_every: int
    lr_decay_epochs: int
    pair_tuning_epochs: int = 0
    choice_tuning_epochs: int = 0


def fit_schedule(
    num_samples: int,
    epochs: int | str = "auto",
    pretrain_epochs: int | str = "auto",
    batch_size: int | str = "auto",
    pair_tuning_epochs: int | str = 0,
    choice_tuning_epochs: int | str = 0,
) -> EstimatorSchedule:
    """The estimator's schedule for ``num_samples`` samples, counted in optimisation steps.

    ``"auto"`` batch size: 256, but at most about an eighth of the data (a power of two, at least 32), so that small
    data sets take several steps per epoch. ``"auto"`` epochs: 100, or more when 100 epochs are fewer than
    ``MIN_TRAIN_STEPS`` steps; ``"auto"`` pretraining: 10 epochs, or enough for ``MIN_PRETRAIN_STEPS``. For 60,000
    samples this is 256 / 100 / 10, the runner's older recipe (docs/findings.md; the estimator keeps that
    staircase schedule, measured on small and tabular data in docs/your-data.md, while the runner's
    default recipe is 15 pretraining epochs, 5 of tuning with the pairs, 10 epochs and a cosine decay); for
    scikit-learn's wine (178 samples) 32 / 500 / 100. ``"auto"`` tuning with the pairs (of the trained model or of the
    choice's folds): enough epochs for ``PAIR_TUNING_STEPS`` steps (80 on scikit-learn's digits, 6 on 60,000
    samples). Restarts and learning-rate decays keep their place in the run (every tenth and every fifth of it, as 10
    and 20 of 100 epochs).

    Raises:
      ValueError: When a value is neither ``"auto"`` nor allowed by the runner's rules.
    """
    if batch_size == "auto":
        batch_size = int(min(256, max(32, 2 ** int(np.log2(max(num_samples // 8, 1))))))
    check_field("batch_size", batch_size, _RUNNER_DEFAULTS["batch_size"].metadata)
    steps = math.ceil(num_samples / batch_size)
    if epochs == "auto":
        epochs = max(100, math.ceil(MIN_TRAIN_STEPS / steps))
    if pretrain_epochs == "auto":
        pretrain_epochs = max(10, math.ceil(MIN_PRETRAIN_STEPS / steps))
    tuning = math.ceil(PAIR_TUNING_STEPS / steps)
    pair_tuning_epochs = tuning if pair_tuning_epochs == "auto" else pair_tuning_epochs
    choice_tuning_epochs = tuning if choice_tuning_epochs == "auto" else choice_tuning_epochs
    values = (
        ("epochs", epochs, "epochs"),
        ("pretrain_epochs", pretrain_epochs, "pretrain_epochs"),
        ("pair_tuning_epochs", pair_tuning_epochs, "pair_tuning_epochs"),
        ("choice_tuning_epochs", choice_tuning_epochs, "pair_tuning_epochs"),  # the runner's rule of tuning epochs
    )
    for name, value, rule in values:
        if not isinstance(value, numbers.Integral):
            raise ValueError(f"{name} must be 'auto' or an integer, got {value!r}")
        check_field(name, value, _RUNNER_DEFAULTS[rule].metadata)
    return EstimatorSchedule(
        int(batch_size),
        int(epochs),
        int(pretrain_epochs),
        max(1, epochs // 10),
        max(1, epochs // 5),
        int(pair_tuning_epochs),
        int(choice_tuning_epochs),
    )


def tuning_for(tuning_epochs: int | str, answers: ConstraintSet) -> int | str:
    """Epochs of tuning with ``answers`` (``pair_tuning_epochs`` or ``choice_tuning_epochs``): "auto" becomes 0
    when any answer is weighed below the paper's hard confidence (``default_alpha(0)`` = 1e4), i.e. may be wrong,
    or when there are none. The tuning pulls a wrong must-link's ends together before the C-ELBO can weigh it: on
    scikit-learn's digits with a fifth of 1,000 answers wrong it cost 6-14 points of ACC on each of three seeds
    (docs/your-data.md). Other values are returned as they are."""
    if isinstance(tuning_epochs, str) and tuning_epochs == "auto":
        if not len(answers) or np.abs(answers.weight).min() < default_alpha(0.0):
            return 0
    return tuning_epochs


def auto_hidden_units(num_features: int) -> tuple[int, ...]:
    """The encoder's hidden widths of ``hidden_units="auto"``: (64, 64) for at most ``TABLE_FEATURES`` features,
    else the paper's 500-500-2000."""
    return TABLE_HIDDEN_UNITS if num_features <= TABLE_FEATURES else PAPER_HIDDEN_UNITS


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


def input_scaling(x: np.ndarray, likelihood: str, scaling: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """The affine map x -> (x - offset) / scale that brings ``x`` [N, F] to ``likelihood``'s scale.

    With ``scaling="auto"``: for ``"bernoulli"`` one offset and one scale for all features, mapping the smallest
    value of ``x`` to 0 and the largest to 1 (data already spanning [0, 1] is left unchanged); for
    ``"gaussian"`` each feature's mean and standard deviation (a constant feature, up to rounding, keeps scale 1). With
    ``"none"``: offset 0 and scale 1. Both are float64 arrays of shape (F,).
    """
    x = np.asarray(x, np.float64)
    offset, scale = np.zeros(x.shape[1]), np.ones(x.shape[1])
    if scaling == "none":
        return offset, scale
    if likelihood == "bernoulli":
        low, high = x.min(), x.max()
        return offset + low, scale * (high - low if high > low else 1.0)
    std = x.std(axis=0)
    return x.mean(axis=0), np.where(std > 1e-10 * np.abs(x).max(axis=0), std, 1.0)


def fallback_pair_scale(num_pairs: int, num_samples: int, rate: float = FALLBACK_PAIR_RATE) -> float:
    """The share of their weight at which ``input_fallback``'s score weighs ``num_pairs`` pairs trained on with
    ``num_samples`` samples: ``rate`` (the estimator's ``FALLBACK_PAIR_RATE``) times the pairs per sample, at most 1
    (their full weight).

    A few pairs among many samples the deep model can hold with clusters that are wrong elsewhere, so that holding
    them says little; pairs that touch much of the data it holds only with clusters that follow them. On the
    benchmark's tuning half the best constant share grew with the number of pairs (docs/your-data.md)."""
    if num_pairs < 0 or num_samples < 1 or not rate >= 0:
        raise ValueError(f"need num_pairs >= 0, num_samples >= 1 and rate >= 0, got {num_pairs}, {num_samples}, {rate}")
    return min(1.0, rate * num_pairs / num_samples)


def fallback_choice(
    x: np.ndarray,
    constraints: ConstraintSet,
    clusterings: dict[str, np.ndarray],
    num_clusters: int,
    covariance_type: str,
    pair_scale: float | None = None,
) -> tuple[str, dict[str, float], paired_mixture.PairedMixture]:
    """What ``input_fallback`` chooses between the deep model's clusters (``clusterings["deep"]``) and the input
    GMM's (``clusterings["input"]``) of the scaled training input ``x`` with the pairs trained on: "input" where the
    input's mixture scores higher with the pairs at ``pair_scale`` of their weight (None:
    :func:`fallback_pair_scale` of the pairs and samples), else "deep"; both scores; and the input's mixture, its
    posteriors under the pairs at their own weight.

    The pairs weigh less in the score because at full weight it counts the training answers a clustering holds,
    which the deep model was trained to hold and the input GMM was not."""
    if pair_scale is None:
        pair_scale = fallback_pair_scale(len(constraints), len(x))
    scored = paired_mixture.score_clusterings(x, constraints, clusterings, num_clusters, covariance_type, pair_scale)
    scores = {name: mixture.objective for name, mixture in scored.items()}
    chosen = "input" if scores["input"] > scores["deep"] else "deep"
    return chosen, scores, scored["input"].with_pairs(x, constraints)


class DCGMMClustering(ClusterMixin, TransformerMixin, BaseEstimator):
    """Deep Conditional Gaussian Mixture Model: clustering steered by pairwise must-link / cannot-link constraints.

    Args:
      n_clusters: Number of clusters K (1: the trivial clustering, with the embedding trained), or "auto": chosen
        in ``cluster_range`` from the pairs on the pretrained embedding (:mod:`dcgmm_tf.cluster_count`; without
        pairs by the BIC of a GMM, with a warning: it follows the embedding's modes rather than classes),
        optionally refined among that K and its neighbours by trained probes (``probe_epochs``).
      cluster_range: The smallest and largest K that ``n_clusters="auto"`` chooses from.
      probe_epochs: With ``n_clusters="auto"`` and pairs of both link types: the K chosen on the embedding and its
        two neighbours are each trained this many epochs on three quarters of the pairs and scored by the
        log-likelihood of the held-out quarter (:func:`dcgmm_tf.cluster_count.choose_by_probes`); "auto": a fifth
        of ``epochs``; 0 (the default): no probes, the embedding's choice. Measured on digits, blobs and
        Fashion-MNIST, the probes moved K away from the true K as often as towards it (docs/your-data.md).
      latent_dim: Dimension of the embedding (``transform`` returns it).
      hidden_units: Widths of the encoder's hidden layers (the decoder mirrors them), or "auto": (64, 64) for data
        of at most ``TABLE_FEATURES`` (50) features (tables, reduced text features), else the paper's 500-500-2000,
        made for 784 pixels. On standardised wine and breast cancer without pairs the small network clustered
        better and 3-4 times faster (docs/your-data.md). ``hidden_units_`` holds the widths used.
      epochs: Training epochs after pretraining; "auto": 100, or more for small data (see :func:`fit_schedule`).
      pretrain_epochs: Autoencoder pretraining epochs; "auto": 10, or more for small data.
      alpha: Confidence |W_ij| of the pairs given as ``ml`` / ``cl`` (1e4: the paper's hard constraints; for pairs
        that are wrong with probability q, ``dcgmm_tf.default_alpha(q)``). A ``ConstraintSet`` brings its own
        weights.
      spread_neighbours: Also give each pair's answer to the pairs one of the ``spread_neighbours`` nearest
        neighbours (in the scaled X) away from either end, at ``spread_weight`` times its weight (0: off, the
        paper's; not the paper's, see :mod:`dcgmm_tf.constraints.spread`).
      spread_weight: A spread pair's share of the weight of the answer it comes from, in (0, 1].
      pair_tuning_epochs: Epochs of tuning the pretrained autoencoder with the pairs before the start (the runner's
        default recipe tunes 5 epochs of Fashion-MNIST; not the paper's, see :mod:`dcgmm_tf.pair_tuning`); "auto":
        about 1,200 steps (:func:`fit_schedule`), none when some answers are weighed as possibly wrong
        (:func:`tuning_for`); 0 (the default): none, the paper's. On digits and blobs a fit at the true K moved by
        -12 to +22 points of ACC with it, no better on average (docs/your-data.md).
      choice_weights: With ``n_clusters="auto"``: the weights of the GMMs that score each candidate K, "equal"
        (the default: 1/K, the prior the model trains with) or "fitted" (EM's; it
        chose K - 1 or K + 1 on two of three Fashion-MNIST seeds, docs/your-data.md).
      choice_splits: With ``n_clusters="auto"``: random splits of the answers into folds; the K that tie the best
        on the first, and their neighbours, are scored again on the others (each fold's copy tuned again) and
        chosen on each answer's mean score (the runner's ``--choice_splits``, 5 by default there). 1 (the default
        here): one split; each more split costs ``choice_tuning_epochs`` on four more copies (docs/your-data.md).
      choice_rule: With ``n_clusters="auto"``: "one_se" (the default: the smallest K that ties the best) or "best"
        (the best score; with ``choice_splits`` > 1 averaged over the splits, the runner's default,
        :func:`dcgmm_tf.cluster_count.choose_num_clusters`).
      choice_tuning_epochs: With ``n_clusters="auto"``: epochs of tuning each fold's copy of the pretrained
        autoencoder with that fold's training answers alone before K is scored on its embedding; "auto" (the
        default): as ``pair_tuning_epochs="auto"`` (none with answers that may be wrong); 0: the choice on the
        pretrained embedding. On digits it chose K = 10 where the pretrained embedding merged two digits (K = 9, 17
        points of ACC lost); the trained model is tuned by ``pair_tuning_epochs`` alone (docs/your-data.md).
      pair_tuning_weight: With ``pair_tuning_epochs``: the weight of the pair term against the mean reconstruction
        loss.
      batch_size: Training and pretraining batch size; "auto": 256, smaller for small data.
      learning_rate: Initial Adam learning rate (decayed x0.9 every fifth of the epochs).
      cluster_init: Start of the mixture, "gmm" (the default, the paper's: a GMM on the embedding, the pairs left to
        the C-ELBO's pair term), "latent_class", "merge" (GMM components grouped by the constraints, and regrouped
        at each restart; without pairs the GMM) or "kmeans" (not the paper's, :func:`dcgmm_tf.starts.kmeans_start`).
        On the benchmark's tuning half with one start, the GMM start ended at least as high as latent_class on 20 of
        23 fits with 100 or 500 random answers, mean ARI .789 against .718 with 100 (docs/your-data.md).
      input_start: Also train a second copy of the pretrained model from the clusters of a GMM fitted in the
        (scaled) input space (:func:`dcgmm_tf.starts.input_gmm`; restarts as ``cluster_init``) and keep the fit
        of the two with the lower negative C-ELBO on the training data and pairs
        (:func:`dcgmm_tf.recipe.fit_loss`); False: the one fit from ``cluster_init``, the paper's way. Not the
        paper's; it doubles the training time (docs/your-data.md).
      input_fallback: Also score the clustering of that input-space GMM against the deep model's, each by the
        Gaussian mixture of the scaled input it implies (:mod:`dcgmm_tf.paired_mixture`: one M-step from its
        clusters, one E-step with the pairs, the C-ELBO's cluster and pair terms with the identity for encoder),
        the pairs weighed at a share of their weight that grows with the pairs per sample
        (:func:`fallback_pair_scale`; 3e-3 at one pair per ten samples): the deep model was trained to hold them
        and the GMM was not. When the input's scores higher, ``labels_``, ``predict`` and ``predict_proba``
        come from that mixture and the fit warns (``chosen_`` is "input"; ``transform`` is still the deep
        embedding). Only for data the estimator models with the Gaussian likelihood: a Gaussian mixture of pixel
        values in [0, 1] is no rival to the Bernoulli decoder. False: always the deep model, the paper's way. Not
        the paper's (docs/your-data.md).
      likelihood: Decoder likelihood, "auto", "bernoulli" or "gaussian"; "auto": Bernoulli when all of X is in
        [0, 1], else Gaussian.
      scaling: How X is brought to the likelihood's scale before the network sees it: "auto" (for the Bernoulli
        likelihood one affine map of all of X onto [0, 1], which leaves images in [0, 1] as they are; for the
        Gaussian one each feature to mean 0 and variance 1) or "none" (X as given). The statistics are kept
        (``offset_``, ``scale_``) and applied by ``predict`` and ``transform``, so the clustering of ``a * X + b``
        is that of ``X``.
      keep_optimizer: Keep the optimizer and its state (Adam's moments) on ``model_``, to train it further;
        without it a pickled estimator is about a third the size.
      random_state: Seed (int, RandomState instance or None) of the initialisation, pretraining, start and
        batches.
      verbose: Keras progress output: 0 silent, 1 progress bar, 2 one line per epoch.

    Attributes:
      model_: The trained Keras model (a ``dcgmm_tf.DCGMM``).
      labels_: Cluster of each training sample, shape (n_samples,).
      constraints_: The ``dcgmm_tf.ConstraintSet`` the model was trained with.
      history_: Per-epoch values of each loss term.
      n_clusters_: The number of clusters fitted.
      cluster_count_: With ``n_clusters="auto"``: the chosen K, every candidate's score and the K that tie the best
        (``cluster_count_.tied``: where several do, the pairs do not tell them apart, and fits at each are worth
        comparing).
      schedule_: The :class:`EstimatorSchedule` used (batch size, epochs, restarts).
      start_: The start of the fit kept: "embedding" (``cluster_init``) or "input" (see ``input_start``).
      fit_losses_: The negative C-ELBO per sample of each start's fit (:func:`dcgmm_tf.recipe.fit_loss`).
      start_labels_: Each start's clusters of the training samples, by start (both starts with ``input_start``).
      chosen_: Where ``labels_`` and ``predict`` come from: "deep" (``model_``) or "input" (``input_mixture_``).
      mixture_scores_: With ``input_fallback`` and the Gaussian likelihood: the score of each clustering, "deep"
        and "input" (F per sample of :mod:`dcgmm_tf.paired_mixture`; higher is better), else empty.
      input_mixture_: With ``input_fallback`` and the Gaussian likelihood: the input-space mixture (a
        :class:`dcgmm_tf.paired_mixture.PairedMixture` on the scaled input; its posteriors and F with the pairs at
        their own weight), else None.
      likelihood_: The decoder likelihood used.
      hidden_units_: The widths of the encoder's hidden layers used.
      offset_, scale_: The scaling of the input, x -> (x - offset_) / scale_, shape (n_features,).
      n_features_in_: Number of features seen in ``fit``.
    """

    def __init__(
        self,
        n_clusters: int | str = 10,
        *,
        cluster_range: tuple[int, int] = (2, 30),
        probe_epochs: int | str = 0,
        latent_dim: int = 10,
        hidden_units: tuple[int, ...] | str = "auto",
        epochs: int | str = "auto",
        pretrain_epochs: int | str = "auto",
        alpha: float = 1e4,
        spread_neighbours: int = 0,
        spread_weight: float = 0.5,
        pair_tuning_epochs: int | str = 0,
        choice_tuning_epochs: int | str = "auto",
        choice_weights: str = "equal",
        choice_splits: int = 1,
        choice_rule: str = "one_se",
        pair_tuning_weight: float = 100.0,
        batch_size: int | str = "auto",
        learning_rate: float = 1e-3,
        cluster_init: str = "gmm",
        input_start: bool = True,
        input_fallback: bool = True,
        likelihood: str = "auto",
        scaling: str = "auto",
        keep_optimizer: bool = False,
        random_state: Any = None,
        verbose: int = 0,
    ):
        self.n_clusters = n_clusters
        self.cluster_range = cluster_range
        self.probe_epochs = probe_epochs
        self.latent_dim = latent_dim
        self.hidden_units = hidden_units
        self.epochs = epochs
        self.pretrain_epochs = pretrain_epochs
        self.alpha = alpha
        self.spread_neighbours = spread_neighbours
        self.spread_weight = spread_weight
        self.pair_tuning_epochs = pair_tuning_epochs
        self.choice_tuning_epochs = choice_tuning_epochs
        self.choice_weights = choice_weights
        self.choice_splits = choice_splits
        self.choice_rule = choice_rule
        self.pair_tuning_weight = pair_tuning_weight
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.cluster_init = cluster_init
        self.input_start = input_start
        self.input_fallback = input_fallback
        self.likelihood = likelihood
        self.scaling = scaling
        self.keep_optimizer = keep_optimizer
        self.random_state = random_state
        self.verbose = verbose

    def fit(
        self, X: Any, y: Any = None, *, ml: Any = None, cl: Any = None, constraints: ConstraintSet | None = None
    ) -> DCGMMClustering:
        """Trains on ``X`` with must-links ``ml`` and cannot-links ``cl`` (index pairs into ``X``, confidence
        ``alpha``) or a ``ConstraintSet`` with per-pair weights; without constraints it is VaDE. ``y`` is ignored."""
        del y
        X = validate_data(self, X, dtype=[np.float64, np.float32], ensure_min_samples=2)
        constraints = as_constraint_set(len(X), ml, cl, constraints, weight=self.alpha)
        if self.likelihood not in ("auto", "bernoulli", "gaussian"):
            raise ValueError(f"likelihood must be 'auto', 'bernoulli' or 'gaussian', got {self.likelihood!r}")
        if self.scaling not in SCALINGS:
            raise ValueError(f"scaling must be one of {list(SCALINGS)}, got {self.scaling!r}")
        auto = isinstance(self.n_clusters, str) and self.n_clusters == "auto"
        if not auto and (not isinstance(self.n_clusters, numbers.Integral) or not 1 <= self.n_clusters <= len(X)):
            raise ValueError(
                f"n_clusters must be 'auto' or an integer in [1, n_samples={len(X)}], got {self.n_clusters!r}"
            )
        probe_epochs = self.probe_epochs
        if not (probe_epochs == "auto" or isinstance(probe_epochs, numbers.Integral) and probe_epochs >= 0):
            raise ValueError(f"probe_epochs must be 'auto' or an integer >= 0, got {probe_epochs!r}")
        candidates = ()
        if auto:
            bounds = self.cluster_range
            pair = isinstance(bounds, (tuple, list)) and len(bounds) == 2
            if not (pair and all(isinstance(b, numbers.Integral) for b in bounds) and bounds[0] <= bounds[1]):
                raise ValueError(f"cluster_range must be (smallest K, largest K), got {bounds!r}")
            candidates = check_candidates([*range(bounds[0], bounds[1]), bounds[1]], len(X))
            if not isinstance(self.choice_splits, numbers.Integral):
                raise ValueError(f"choice_splits must be an integer >= 1, got {self.choice_splits!r}")
            for name in ("choice_weights", "choice_splits", "choice_rule"):
                check_field(name, getattr(self, name), _RUNNER_DEFAULTS[name].metadata)
        for name in ("input_start", "input_fallback"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.cluster_init not in START_STRATEGIES:
            raise ValueError(f"cluster_init must be one of {list(START_STRATEGIES)}, got {self.cluster_init!r}.")
        seed = self.random_state
        if not isinstance(seed, numbers.Integral):
            seed = int(check_random_state(seed).randint(np.iinfo(np.int32).max))
        seed = int(seed)
        units = self.hidden_units
        if isinstance(units, str) and units == "auto":
            units = auto_hidden_units(X.shape[1])
        if not (
            isinstance(units, (tuple, list))
            and units
            and all(isinstance(u, numbers.Integral) and u >= 1 for u in units)
        ):
            raise ValueError(f"hidden_units must be 'auto' or a non-empty sequence of positive integers, got {units!r}")
        self.hidden_units_ = tuple(int(u) for u in units)
        self.schedule_ = fit_schedule(
            len(X),
            self.epochs,
            self.pretrain_epochs,
            self.batch_size,
            tuning_for(self.pair_tuning_epochs, constraints),
            tuning_for(self.choice_tuning_epochs, constraints),
        )
        if not auto:  # checked above, used only to choose K
            self.schedule_ = dataclasses.replace(self.schedule_, choice_tuning_epochs=0)
        for name, value in (("seed", seed), ("learning_rate", self.learning_rate), ("latent_dim", self.latent_dim)):
            check_field(name, value, _RUNNER_DEFAULTS[name].metadata)  # the runner's rules
        self.likelihood_ = self.likelihood
        if self.likelihood == "auto":
            self.likelihood_ = "bernoulli" if X.min() >= 0 and X.max() <= 1 else "gaussian"
        self.offset_, self.scale_ = input_scaling(X, self.likelihood_, self.scaling)
        x = validation.check_data(self._scaled(X), likelihood=self.likelihood_, name="X")
        if not isinstance(self.spread_neighbours, numbers.Integral):
            raise ValueError(f"spread_neighbours must be a non-negative integer, got {self.spread_neighbours!r}")
        for name in ("spread_neighbours", "spread_weight", "pair_tuning_weight"):
            check_field(name, getattr(self, name), _RUNNER_DEFAULTS[name].metadata)
        answers = constraints
        spread = functools.partial(
            recipe.spread_to_neighbours, x=x, k=self.spread_neighbours, factor=self.spread_weight
        )
        constraints = spread(answers)
        pretrained = None
        if auto:
            pretrained = self._pretrained(x, 2, seed)  # the final model takes its autoencoder too
            tuned_embedding = None
            if self.schedule_.choice_tuning_epochs:  # each fold's embedding tuned with its training answers alone

                def tuned_embedding(pairs: ConstraintSet) -> np.ndarray:
                    model = recipe.with_autoencoder(self._builder(x, 2), seed, pretrained)
                    recipe.tune(
                        model,
                        x,
                        spread(pairs),
                        epochs=self.schedule_.choice_tuning_epochs,
                        weight=self.pair_tuning_weight,
                        seed=seed,
                        batch_size=self.schedule_.batch_size,
                    )
                    return model.embed(x)

            self.cluster_count_ = choose_num_clusters(
                pretrained.embed(x),
                answers,
                candidates,
                seed=seed,
                fold_embedding=tuned_embedding,
                weights=self.choice_weights,
                splits=self.choice_splits,
                rule=self.choice_rule,
            )
            if self.probe_epochs != 0:
                self.cluster_count_ = probe_num_clusters(
                    self.cluster_count_,
                    answers,
                    x,
                    self._probe(x, pretrained, seed),
                    seed=seed,
                    spread=spread,
                )
            self.n_clusters_ = self.cluster_count_.num_clusters
        else:
            self.n_clusters_ = int(self.n_clusters)
        input_gmm = None  # for the second start, and for the fallback where it applies (see _choose)
        if (self.input_start or self.input_fallback and self.likelihood_ == "gaussian") and self.n_clusters_ > 1:
            input_gmm = starts.input_gmm(x, self.n_clusters_, seed, spread=self.scale_, constraints=answers)
        input_clusters = None if input_gmm is None else starts.assign(input_gmm, x)
        self.model_ = self._train(x, constraints, self.n_clusters_, seed, pretrained, input_clusters)
        self.constraints_ = constraints
        self._choose(x, constraints, input_gmm, input_clusters)
        if self.chosen_ == "input":  # the training samples' posteriors with their pairs
            self.labels_ = self.input_mixture_.probabilities.argmax(-1)
        else:  # the kept model's clusters, found by _train
            self.labels_ = self.start_labels_[self.start_]
        empty = np.flatnonzero(np.bincount(self.labels_, minlength=self.n_clusters_) == 0)
        if len(empty):
            warnings.warn(
                f"clusters {empty.tolist()} of {self.n_clusters_} hold no training sample; fewer clusters, more "
                "epochs or pairs between the samples they should hold may help",
                stacklevel=2,
            )
        return self

    def _builder(self, x: np.ndarray, num_clusters: int) -> Callable[[int], DCGMM]:
        """Makes the model of ``num_clusters`` clusters for scaled ``x`` from a seed; the library calls it under
        that seed's :func:`dcgmm_tf.runtime.process_seeds`, so the initial weights follow random_state."""
        return functools.partial(
            mlp_model, x.shape[1], num_clusters, self.latent_dim, self.hidden_units_, self.likelihood_
        )

    def _pretrained(self, x: np.ndarray, num_clusters: int, seed: int) -> DCGMM:
        """A model with ``num_clusters`` clusters after its autoencoder pretraining on scaled ``x``."""
        return recipe.pretrained_model(
            self._builder(x, num_clusters),
            x,
            seed=seed,
            epochs=self.schedule_.pretrain_epochs,
            batch_size=self.schedule_.batch_size,
            name="estimator",
            cache_dir=None,
            verbose=self.verbose,
        )

    def _probe(self, x: np.ndarray, pretrained: DCGMM, seed: int) -> Callable[[int, ConstraintSet], DCGMM]:
        """Trains a probe of ``probe_epochs`` (:func:`dcgmm_tf.cluster_count.probe_num_clusters`): K clusters on
        the ``pretrained`` autoencoder, the given pairs."""
        epochs = self.probe_epochs if self.probe_epochs != "auto" else max(1, self.schedule_.epochs // 5)
        schedule = dataclasses.replace(
            fit_schedule(len(x), epochs, self.schedule_.pretrain_epochs, self.schedule_.batch_size),
            pair_tuning_epochs=self.schedule_.pair_tuning_epochs,
        )

        def train_probe(num_clusters: int, pairs: ConstraintSet) -> DCGMM:
            model = recipe.with_autoencoder(self._builder(x, num_clusters), seed, pretrained)
            self._fit(model, x, pairs, seed, schedule)
            return model

        return train_probe

    def _train(
        self,
        x: np.ndarray,
        constraints: ConstraintSet,
        num_clusters: int,
        seed: int,
        pretrained: DCGMM | None,
        input_clusters: np.ndarray | None = None,
    ) -> DCGMM:
        """The library calls of the runner's recipe (:func:`dcgmm_tf.recipe.train_dcgmm`) on scaled ``x``, on the
        autoencoder of ``pretrained`` (a model of any K pretrained on ``x``) or a new pretraining when None; with
        ``input_start``, a second fit from ``input_clusters``, the samples' clusters under
        :func:`dcgmm_tf.starts.input_gmm`."""
        if pretrained is None:
            model = self._pretrained(x, num_clusters, seed)
        else:
            model = recipe.with_autoencoder(self._builder(x, num_clusters), seed, pretrained)
        # The second start trains a copy of the pretrained model, made before the first fit changes its weights.
        second = self.input_start and num_clusters > 1
        other = recipe.with_autoencoder(self._builder(x, num_clusters), seed, model) if second else None
        self.history_ = self._fit(model, x, constraints, seed, self.schedule_)
        self.start_ = "embedding"
        self.fit_losses_ = {}
        self.start_labels_ = {"embedding": model.cluster_probabilities(x).argmax(-1)}
        if second:
            self.fit_losses_["embedding"] = recipe.fit_loss(model, x, constraints)
            history = self._fit(other, x, constraints, seed, self.schedule_, input_clusters)
            self.fit_losses_["input"] = recipe.fit_loss(other, x, constraints)
            self.start_labels_["input"] = other.cluster_probabilities(x).argmax(-1)
            if self.fit_losses_["input"] < self.fit_losses_["embedding"]:
                model, self.history_, self.start_ = other, history, "input"
            logging.info("kept the fit from the %s start (negative C-ELBO %s)", self.start_, self.fit_losses_)
        if not self.keep_optimizer:
            # Its moments are twice the weights' size; the model predicts without them (and unpickles uncompiled).
            model.optimizer, model.compiled = None, False
        return model

    def _fit(
        self,
        model: DCGMM,
        x: np.ndarray,
        constraints: ConstraintSet,
        seed: int,
        schedule: EstimatorSchedule,
        input_clusters: np.ndarray | None = None,
    ) -> dict[str, list]:
        """The recipe's steps on the pretrained ``model``: tuning with the pairs (``pair_tuning_epochs``), the start
        of its mixture (``cluster_init``'s on the embedding, or, given ``input_clusters``, those clusters of the
        samples moment-matched into the embedding) and the fit on ``schedule``; returns the history."""
        recipe.tune(
            model,
            x,
            constraints,
            epochs=schedule.pair_tuning_epochs,
            weight=self.pair_tuning_weight,
            seed=seed,
            batch_size=schedule.batch_size,
        )
        # One cluster is the trivial clustering: the paper's start, no restarts.
        strategy = self.cluster_init if model.num_clusters > 1 else "gmm"
        if input_clusters is not None:
            z = model.embed(x)
            model.set_cluster_parameters(
                *starts.moment_match(z, input_clusters, model.num_clusters, 2 * model.min_variance)
            )
        else:
            start_mixture(model, x, strategy, constraints, seed=seed)
        fit = FitSchedule(
            schedule.epochs,
            batch_size=schedule.batch_size,
            seed=seed,
            learning_rate=self.learning_rate,
            lr_decay_epochs=schedule.lr_decay_epochs,
            lr_schedule=LR_SCHEDULE,
        )
        return recipe.fit(
            model,
            x,
            constraints,
            fit,
            start=strategy,
            restart_every=schedule.restart_every,
            seed=seed,
            verbose=self.verbose,
            check_inputs=False,
        )

    def _choose(
        self,
        x: np.ndarray,
        constraints: ConstraintSet,
        input_gmm: GaussianMixture | None,
        input_clusters: np.ndarray | None,
    ) -> None:
        """Sets ``chosen_``, ``mixture_scores_`` and ``input_mixture_`` (see ``input_fallback``): the kept deep
        model's clusters (``start_labels_[start_]``) against ``input_clusters``, those of ``input_gmm``."""
        self.chosen_, self.mixture_scores_, self.input_mixture_ = "deep", {}, None
        if not self.input_fallback or input_gmm is None or self.likelihood_ != "gaussian":
            return
        clusterings = {"deep": self.start_labels_[self.start_], "input": input_clusters}
        self.chosen_, self.mixture_scores_, self.input_mixture_ = fallback_choice(
            x, constraints, clusterings, self.n_clusters_, input_gmm.covariance_type
        )
        if self.chosen_ == "input":
            warnings.warn(
                "a Gaussian mixture of the input explains the data and pairs better than the deep model's clusters "
                f"(score {self.mixture_scores_['input']:.4g} against {self.mixture_scores_['deep']:.4g}); labels_ "
                "and predict come from it (input_fallback=False keeps the deep model)",
                stacklevel=3,
            )

    def _probabilities(self, x: np.ndarray) -> np.ndarray:
        if self.chosen_ == "input":
            return self.input_mixture_.predict_proba(x)
        return self.model_.cluster_probabilities(x)

    def _scaled(self, X: np.ndarray) -> np.ndarray:
        return ((X - self.offset_) / self.scale_).astype(np.float32)

    def _fitted_input(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        return self._scaled(validate_data(self, X, dtype=[np.float64, np.float32], reset=False))

    def predict_proba(self, X: Any) -> np.ndarray:
        """p(c|x) for each sample and cluster, shape (n_samples, n_clusters)."""
        return self._probabilities(self._fitted_input(X))

    def predict(self, X: Any) -> np.ndarray:
        """The most probable cluster of each sample."""
        return self.predict_proba(X).argmax(-1)

    def transform(self, X: Any) -> np.ndarray:
        """The embedding means mu(x), shape (n_samples, latent_dim)."""
        x = self._fitted_input(X)
        return self.model_.embed(x)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True  # bit-identical refits need TensorFlow's op determinism (process-wide)
        return tags
