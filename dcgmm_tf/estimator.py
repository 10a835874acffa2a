"""DC-GMM as a scikit-learn estimator: ``DCGMMClustering(n_clusters=3).fit(X, ml=[(0, 1)], cl=[(0, 2)])``.

The estimator trains through the runner's recipe (:mod:`dcgmm_tf.recipe`: ``pretrained_model``, ``tune``,
``start_mixture``, ``fit``, and ``choose_clusters`` for ``n_clusters="auto"``). What is its own: the scaling of its
input and a schedule sized to the data (:mod:`dcgmm_tf.sizing`), its two starts (:mod:`dcgmm_tf.deep_fit`), the
input fallback (:mod:`dcgmm_tf.fallback`) and the ``fit``/``predict`` contract. ``clone``, ``Pipeline`` and
``GridSearchCV`` work as for any scikit-learn clusterer; the fitted Keras model is ``model_`` (save it with
``model_.save("m.keras")``).
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from dcgmm_tf import recipe, sizing, starts, validation
from dcgmm_tf.config import CHOICE_RULES, MIXTURE_WEIGHTS, START_STRATEGIES
from dcgmm_tf.constraints import ConstraintSet, as_constraint_set
from dcgmm_tf.deep_fit import DeepFit
from dcgmm_tf.fallback import choose_labels


def _epochs(lowest: int) -> list:
    """The constraints of an epoch count of at least ``lowest``, or "auto"."""
    return [Interval(Integral, lowest, None, closed="left"), StrOptions({"auto"})]


def _seed(random_state: Any) -> int:
    """The fit's integer seed: ``random_state`` itself when it is an integer, else one drawn from it."""
    if isinstance(random_state, numbers.Integral):
        return int(random_state)
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


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
        of at most 50 features (tables, reduced text features), else the paper's 500-500-2000, made for 784 pixels
        (:func:`dcgmm_tf.sizing.hidden_units_for`). On standardised wine and breast cancer without pairs the small
        network clustered better and 3-4 times faster. ``hidden_units_`` holds the widths used.
      epochs: Training epochs after pretraining; "auto": 100, or more for small data (see
        :func:`dcgmm_tf.sizing.fit_schedule`).
      pretrain_epochs: Autoencoder pretraining epochs; "auto": 10, or more for small data.
      tol: Stop each fit once at most this share of the training samples (1e-3 by default) changed cluster in each
        of ``n_iter_no_change`` epochs in a row (``history_`` holds the epochs run; not the paper's, see
        docs/your-data.md); None: every epoch, the paper's way.
      n_iter_no_change: See ``tol`` (10 by default).
      alpha: Confidence |W_ij| of the pairs given as ``ml`` / ``cl`` (1e4: the paper's hard constraints; for pairs
        that are wrong with probability q, ``dcgmm_tf.default_alpha(q)``). A ``ConstraintSet`` brings its own
        weights.
      spread_neighbours: Also give each pair's answer to the pairs one of the ``spread_neighbours`` nearest
        neighbours (in the scaled X) away from either end, at ``spread_weight`` times its weight (0: off, the
        paper's; not the paper's, see :mod:`dcgmm_tf.constraints.spread`).
      spread_weight: A spread pair's share of the weight of the answer it comes from, in (0, 1].
      pair_tuning_epochs: Epochs of tuning the pretrained autoencoder with the pairs before the start (the runner's
        default recipe tunes 5 epochs of Fashion-MNIST; not the paper's, see :mod:`dcgmm_tf.pair_tuning`); "auto":
        about 1,200 steps (:func:`dcgmm_tf.sizing.fit_schedule`), none when some answers are weighed as possibly
        wrong (:func:`dcgmm_tf.sizing.tuning_for`); 0 (the default): none, the paper's (docs/your-data.md).
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
        clusters, one E-step with the pairs, the C-ELBO's cluster and pair terms with the identity for encoder), the
        pairs weighed at a share of their weight that grows with the pairs per sample
        (:func:`dcgmm_tf.fallback.pair_scale`; 3e-3 at one pair per ten samples): the deep model was trained to hold
        them and the GMM was not (:mod:`dcgmm_tf.fallback`: what is compared, with no margin, and why). When the
        input's scores higher, ``labels_``, ``predict`` and ``predict_proba`` come from that mixture and the fit
        warns (``chosen_`` is "input"; ``transform`` is still the deep embedding). Only for data the estimator
        models with the Gaussian likelihood: a Gaussian mixture of pixel values in [0, 1] is no rival to the
        Bernoulli decoder. False: always the deep model, the paper's way. Not the paper's (docs/your-data.md).
      likelihood: Decoder likelihood, "auto", "bernoulli" or "gaussian"; "auto": Bernoulli for image-like X (few
        levels, a tenth of the entries at an extreme; as a whole or feature by feature), else Gaussian
        (:func:`dcgmm_tf.sizing.likelihood_for`). It counts values, not where they lie: an affine map of X, or of
        each feature (standardising), does not change it.
      scaling: How X is brought to the likelihood's scale before the network sees it: "auto" (Bernoulli: all of X,
        or each feature of images standardised feature by feature, onto [0, 1]; Gaussian: each feature to mean 0
        and variance 1) or "none" (X as given). The statistics (``offset_``, ``scale_``) are applied by ``predict``
        and ``transform`` too, so the clustering of ``a * X + b`` is that of ``X``.
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

    _parameter_constraints: dict = {  # checked at fit; the values that depend on X in fit itself
        "n_clusters": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "cluster_range": [tuple, list],
        "probe_epochs": _epochs(0),
        "latent_dim": [Interval(Integral, 1, None, closed="left")],
        "hidden_units": [StrOptions({"auto"}), tuple, list],
        "epochs": _epochs(1),
        "pretrain_epochs": _epochs(0),
        "tol": [Interval(Real, 0, 1, closed="left"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, math.inf, closed="neither")],
        "spread_neighbours": [Interval(Integral, 0, None, closed="left")],
        "spread_weight": [Interval(Real, 0, 1, closed="right")],
        "pair_tuning_epochs": _epochs(0),
        "choice_tuning_epochs": _epochs(0),
        "choice_weights": [StrOptions(set(MIXTURE_WEIGHTS))],
        "choice_splits": [Interval(Integral, 1, None, closed="left")],
        "choice_rule": [StrOptions(set(CHOICE_RULES))],
        "pair_tuning_weight": [Interval(Real, 0, math.inf, closed="neither")],
        "batch_size": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "cluster_init": [StrOptions(set(START_STRATEGIES))],
        "input_start": ["boolean"],
        "input_fallback": ["boolean"],
        "likelihood": [StrOptions({"auto", "bernoulli", "gaussian"})],
        "scaling": [StrOptions(set(sizing.SCALINGS))],
        "keep_optimizer": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

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
        tol: float | None = 1e-3,
        n_iter_no_change: int = 10,
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
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
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

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(
        self, X: Any, y: Any = None, *, ml: Any = None, cl: Any = None, constraints: ConstraintSet | None = None
    ) -> DCGMMClustering:
        """Trains on ``X`` with must-links ``ml`` and cannot-links ``cl`` or a ``ConstraintSet``; without any, VaDE.

        Args:
          X: The training samples, shape (n_samples, n_features).
          y: Ignored.
          ml: Must-links, index pairs into ``X``, of confidence ``alpha``.
          cl: Cannot-links, likewise.
          constraints: A ``ConstraintSet`` with per-pair weights, instead of ``ml`` and ``cl``.

        Returns:
          The fitted estimator.
        """
        del y
        X = validate_data(self, X, dtype=[np.float64, np.float32], ensure_min_samples=2)
        answers = as_constraint_set(len(X), ml, cl, constraints, weight=self.alpha)
        candidates = sizing.cluster_candidates(self.n_clusters, self.cluster_range, len(X))
        form = sizing.image_form(X) if self.likelihood == "auto" else None  # counted once, and only if needed
        likelihood = sizing.likelihood_for(self.likelihood, form)
        offset, scale = sizing.input_scaling(X, likelihood, self.scaling, form)
        x = validation.check_data(sizing.scaled(X, offset, scale), likelihood=likelihood, name="X")
        steps = self._deep_fit(x, answers, likelihood, bool(candidates))
        spread = functools.partial(
            recipe.spread_to_neighbours, x=x, k=self.spread_neighbours, factor=self.spread_weight
        )
        pairs, pretrained, count = spread(answers), None, None
        if candidates:  # K chosen on a pretrained embedding, whose autoencoder the fit takes too
            pretrained, count = steps.chosen_clusters(answers, candidates, spread)
        k = int(self.n_clusters) if count is None else count.num_clusters
        use_fallback = self.input_fallback and likelihood == "gaussian"
        gmm = rival = None
        if (self.input_start or use_fallback) and k > 1:  # the second start's clusters and the fallback's rival
            gmm = starts.input_gmm(x, k, steps.seed, spread=scale, constraints=answers)
            rival = starts.assign(gmm, x)
        fits = steps.train_starts(pairs, k, pretrained, rival if self.input_start else None)
        kept = choose_labels(x, pairs, fits.kept_labels, gmm if use_fallback else None, rival)
        self.likelihood_, self.offset_, self.scale_, self.constraints_ = likelihood, offset, scale, pairs
        self.hidden_units_, self.schedule_, self.n_clusters_ = steps.hidden_units, steps.schedule, k
        self.model_, self.history_, self.start_, self.fit_losses_ = fits.model, fits.history, fits.start, fits.losses
        self.start_labels_, self.chosen_, self.mixture_scores_ = fits.labels, kept.chosen, kept.scores
        self.input_mixture_, self.labels_ = kept.mixture, kept.labels
        if count is not None:
            self.cluster_count_ = count
        _warn_of_empty_clusters(self.labels_, self.n_clusters_)
        return self

    def _deep_fit(self, x: np.ndarray, answers: ConstraintSet, likelihood: str, auto: bool) -> DeepFit:
        """The settings of the deep fits, resolved for the scaled input ``x`` and the ``answers``."""
        schedule = sizing.fit_schedule(
            len(x),
            self.epochs,
            self.pretrain_epochs,
            self.batch_size,
            sizing.tuning_for(self.pair_tuning_epochs, answers),
            sizing.tuning_for(self.choice_tuning_epochs, answers) if auto else 0,  # used only to choose K
        )
        return DeepFit(
            x,
            _seed(self.random_state),
            schedule,
            self.latent_dim,
            sizing.hidden_units_for(self.hidden_units, x.shape[1]),
            likelihood,
            self.learning_rate,
            self.cluster_init,
            self.pair_tuning_weight,
            self.choice_weights,
            self.choice_splits,
            self.choice_rule,
            self.probe_epochs,
            self.keep_optimizer,
            self.verbose,
            self.tol,
            self.n_iter_no_change,
        )

    def _scaled(self, X: np.ndarray) -> np.ndarray:
        return sizing.scaled(X, self.offset_, self.scale_)

    def _fitted_input(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        return self._scaled(validate_data(self, X, dtype=[np.float64, np.float32], reset=False))

    def predict_proba(self, X: Any) -> np.ndarray:
        """p(c|x) for each sample and cluster, shape (n_samples, n_clusters), of the clustering ``chosen_``."""
        x = self._fitted_input(X)
        return self.input_mixture_.predict_proba(x) if self.chosen_ == "input" else self.model_.cluster_probabilities(x)

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


def _warn_of_empty_clusters(labels: np.ndarray, num_clusters: int) -> None:
    """Warns when some of the ``num_clusters`` clusters hold none of the training samples' ``labels``."""
    empty = np.flatnonzero(np.bincount(labels, minlength=num_clusters) == 0)
    if len(empty):
        warnings.warn(
            f"clusters {empty.tolist()} of {num_clusters} hold no training sample; fewer clusters, more "
            "epochs or pairs between the samples they should hold may help",
            stacklevel=4,  # this function, the estimator's fit, its fit context, the caller
        )
