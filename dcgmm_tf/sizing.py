"""The estimator's sizing rules: pure functions of the data's size and shape and of the estimator's parameters.

:func:`fit_schedule` sizes the schedule (batch, epochs, tuning) to the number of samples, :func:`hidden_units_for`
the network to the number of features, :func:`cluster_candidates` the range of K to the number of samples,
:func:`tuning_for` turns the tuning off for answers that may be wrong, and :func:`input_scaling` brings the input to
the decoder likelihood's scale. Each docstring gives the rule's reason and where it was measured (docs/your-data.md).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Sequence

import numpy as np

from dcgmm_tf.cluster_count import check_candidates
from dcgmm_tf.config import RunConfig, check_field
from dcgmm_tf.constraints import ConstraintSet, default_alpha
from dcgmm_tf.networks import PAPER_HIDDEN_UNITS

_RUNNER_DEFAULTS = RunConfig.__dataclass_fields__
SCALINGS = ("auto", "none")
MIN_TRAIN_STEPS = 3000  # the "auto" schedule trains for at least this many steps ...
MIN_PRETRAIN_STEPS = 600  # ... and pretrains for at least this many
PAIR_TUNING_STEPS = 1200  # "auto" tuning with the pairs: about the runner's 5 epochs of Fashion-MNIST (1,175 steps)
TABLE_FEATURES = 50  # hidden_units="auto": data of at most this many features get the small network ...
TABLE_HIDDEN_UNITS = (64, 64)  # ... and the rest the paper's, made for 784 pixels
IMAGE_LEVELS = 256  # likelihood="auto": Bernoulli for data of at most this many values (8-bit images) ...
BACKGROUND_SHARE = 0.1  # ... with at least this share of the entries at one extreme (images: about half)


@dataclasses.dataclass(frozen=True)
class EstimatorSchedule:
    """The schedule that :class:`dcgmm_tf.estimator.DCGMMClustering` resolved for its data (``schedule_``).

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

    Args:
      num_samples: The number of training samples.
      epochs: Training epochs, or "auto".
      pretrain_epochs: Pretraining epochs, or "auto".
      batch_size: Training and pretraining batch size, or "auto".
      pair_tuning_epochs: Epochs of tuning with the pairs before the start, or "auto".
      choice_tuning_epochs: Epochs of tuning each fold's embedding for the choice of K, or "auto".

    Returns:
      The schedule.

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


def probe_schedule(schedule: EstimatorSchedule, num_samples: int, probe_epochs: int | str) -> EstimatorSchedule:
    """The schedule of a probe of ``n_clusters="auto"`` (:func:`dcgmm_tf.cluster_count.probe_num_clusters`):
    ``probe_epochs`` ("auto": a fifth of ``schedule``'s epochs, at least 1) at ``schedule``'s batch size, with its
    restarts and decays in their place in the shorter run, and ``schedule``'s tuning with the pairs, since the probes
    stand for the fit at their K."""
    epochs = probe_epochs if probe_epochs != "auto" else max(1, schedule.epochs // 5)
    return dataclasses.replace(
        fit_schedule(num_samples, epochs, schedule.pretrain_epochs, schedule.batch_size),
        pair_tuning_epochs=schedule.pair_tuning_epochs,
    )


def tuning_for(tuning_epochs: int | str, answers: ConstraintSet) -> int | str:
    """Epochs of tuning with ``answers`` (``pair_tuning_epochs`` or ``choice_tuning_epochs``).

    "auto" becomes 0 when any answer is weighed below the paper's hard confidence (``default_alpha(0)`` = 1e4), i.e.
    may be wrong, or when there are none. The tuning pulls a wrong must-link's ends together before the C-ELBO can
    weigh it: on scikit-learn's digits with a fifth of 1,000 answers wrong it cost 6-14 points of ACC on each of three
    seeds (docs/your-data.md). Other values are returned as they are.

    Args:
      tuning_epochs: The estimator's parameter: epochs, or "auto".
      answers: The answered pairs.

    Returns:
      The epochs, or "auto" for :func:`fit_schedule` to size.
    """
    if isinstance(tuning_epochs, str) and tuning_epochs == "auto":
        if not len(answers) or np.abs(answers.weight).min() < default_alpha(0.0):
            return 0
    return tuning_epochs


def cluster_candidates(n_clusters: int | str, cluster_range: Sequence[int], num_samples: int) -> tuple[int, ...]:
    """The candidate values of K of ``n_clusters="auto"``: all of ``cluster_range`` (smallest K, largest K); empty for
    a given K.

    Args:
      n_clusters: The estimator's parameter: K, or "auto".
      cluster_range: The smallest and the largest K to choose from.
      num_samples: The number of training samples, the largest K possible.

    Returns:
      The candidates, increasing.

    Raises:
      ValueError: When a given K exceeds ``num_samples``, or ``cluster_range`` is not two increasing integers in
        [2, num_samples].
    """
    if n_clusters != "auto":
        if n_clusters > num_samples:
            raise ValueError(
                f"n_clusters must be 'auto' or an integer in [1, n_samples={num_samples}], got {n_clusters!r}"
            )
        return ()
    bounds = cluster_range
    if not (len(bounds) == 2 and all(isinstance(b, numbers.Integral) for b in bounds) and bounds[0] <= bounds[1]):
        raise ValueError(f"cluster_range must be (smallest K, largest K), got {bounds!r}")
    return check_candidates([*range(bounds[0], bounds[1]), bounds[1]], num_samples)


def hidden_units_for(hidden_units: Sequence[int] | str, num_features: int) -> tuple[int, ...]:
    """The encoder's hidden widths for data of ``num_features`` features.

    ``"auto"``: ``TABLE_HIDDEN_UNITS`` (64, 64) for at most ``TABLE_FEATURES`` features (tables, reduced text
    features), else the paper's 500-500-2000, made for 784 pixels. On standardised wine and breast cancer without
    pairs the small network clustered better and 3-4 times faster (docs/your-data.md).

    Args:
      hidden_units: The widths, or "auto".
      num_features: The number of input features.

    Returns:
      The widths as a tuple of ints.

    Raises:
      ValueError: When ``hidden_units`` is neither "auto" nor a non-empty sequence of positive integers.
    """
    units = hidden_units
    if isinstance(units, str) and units == "auto":
        units = TABLE_HIDDEN_UNITS if num_features <= TABLE_FEATURES else PAPER_HIDDEN_UNITS
    if not (
        isinstance(units, (tuple, list)) and units and all(isinstance(u, numbers.Integral) and u >= 1 for u in units)
    ):
        raise ValueError(f"hidden_units must be 'auto' or a non-empty sequence of positive integers, got {units!r}")
    return tuple(int(u) for u in units)


def input_scaling(
    x: np.ndarray, likelihood: str, scaling: str = "auto", form: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The affine map x -> (x - offset) / scale that brings ``x`` [N, F] to ``likelihood``'s scale.

    With ``scaling="auto"``: for ``"bernoulli"`` the smallest value to 0 and the largest to 1, feature by feature
    when ``x`` is image-like only feature by feature (``form`` "features", :func:`image_form`: an image whose
    features were standardised one by one, as tables often are), else by one offset and one scale for all features
    (pixels share one scale, and images already spanning [0, 1] are left unchanged); for ``"gaussian"`` each
    feature's mean and standard deviation (a constant feature, up to rounding, keeps scale 1). With ``"none"``:
    offset 0 and scale 1. Both are float64 arrays of shape (F,).

    Args:
      x: The training input.
      likelihood: The decoder likelihood, "bernoulli" or "gaussian".
      scaling: "auto" or "none".
      form: ``image_form(x)`` where the caller has it; None: counted here when the likelihood needs it.

    Returns:
      The offset and the scale.
    """
    x = np.asarray(x, np.float64)
    offset, scale = np.zeros(x.shape[1]), np.ones(x.shape[1])
    if scaling == "none":
        return offset, scale
    if likelihood == "bernoulli":
        if (image_form(x) if form is None else form) != "features":
            low, high = x.min(), x.max()
            return offset + low, scale * (high - low if high > low else 1.0)
        low, high = x.min(axis=0), x.max(axis=0)
        return low, np.where(high > low, high - low, 1.0)
    std = x.std(axis=0)
    return x.mean(axis=0), np.where(std > 1e-10 * np.abs(x).max(axis=0), std, 1.0)


def image_like(x: np.ndarray, per_feature: bool = False) -> bool:
    """Whether ``x`` [N, F] has at most :data:`IMAGE_LEVELS` distinct values (the levels of an 8-bit image) and at
    least :data:`BACKGROUND_SHARE` of its entries at the smallest or the largest of them (a background): over all of
    ``x``, or with ``per_feature`` in each feature, each with its own values and extremes, and then at most N / 2
    values a feature (levels that repeat, as pixels' do: with fewer than 512 samples any feature of continuous values
    would otherwise pass).

    Counting values never looks at where they lie, so an affine map of all of ``x`` leaves the first answer as it is,
    and an affine map of each feature (standardising, say) the second.
    """
    x = np.asarray(x)
    if not per_feature:
        x = x.reshape(-1, 1)
    at_low = np.count_nonzero(x == x.min(axis=0), axis=0)
    at_high = np.count_nonzero(x == x.max(axis=0), axis=0)
    if np.maximum(at_low, at_high).sum() < BACKGROUND_SHARE * x.size:
        return False
    levels = 1 + np.count_nonzero(np.diff(np.sort(x, axis=0), axis=0), axis=0)
    return bool(levels.max() <= (min(IMAGE_LEVELS, len(x) // 2) if per_feature else IMAGE_LEVELS))


def image_form(x: np.ndarray) -> str:
    """How ``x`` [N, F] is image-like (:func:`image_like`), counted once for :func:`likelihood_for` and
    :func:`input_scaling`: "whole" (as a whole), "features" (only feature by feature: an image set standardised one
    feature at a time) or "none"."""
    if image_like(x):
        return "whole"
    return "features" if image_like(x, per_feature=True) else "none"


def likelihood_for(likelihood: str, form: str | None) -> str:
    """The decoder likelihood of ``likelihood="auto"`` for data of :func:`image_form` ``form``; other values as they
    are (``form`` may then be None: the values need not be counted).

    "auto" gives Bernoulli for image-like data, as a whole (at most :data:`IMAGE_LEVELS` distinct values, at least
    :data:`BACKGROUND_SHARE` of the entries at the smallest or the largest) or feature by feature (each feature's own
    values and extremes, at most N / 2 values a feature); Gaussian otherwise. The rule counts values and never looks
    at where they lie, so an affine map of all of ``x`` (``a * x + b``, ``a`` != 0) or of each feature
    (standardising) leaves it as it is; with scaling "auto" (:func:`input_scaling`) the network then sees the same
    input for ``a`` > 0 and its mirror image 1 - input for ``a`` < 0, and an image set standardised feature by
    feature is brought back onto [0, 1] one feature at a time. On the estimator's benchmark (studies/) the two image
    sets (digits, Fashion-MNIST; at most 17 and 256 values a feature, half of the entries at their feature's extreme,
    and as a whole) are Bernoulli, and its 17 tables and text sets (43 to 1,311 values a feature, at most 1.3 % of
    the entries at their feature's extreme) Gaussian.
    """
    if likelihood != "auto":
        return likelihood
    if form is None:
        raise ValueError('likelihood="auto" needs the image_form of the data')
    return "gaussian" if form == "none" else "bernoulli"


def scaled(x: np.ndarray, offset: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``x`` mapped by :func:`input_scaling`'s ``offset`` and ``scale``, as float32 for the network."""
    return ((x - offset) / scale).astype(np.float32)
