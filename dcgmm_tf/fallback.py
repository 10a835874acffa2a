"""The estimator's input fallback (``input_fallback=True``): the deep model's clusters or an input-space GMM's.

Not the paper's. A deep model can fold what a Gaussian mixture of the input already separates, so after the fit
the estimator compares two clusterings of the same training samples:

- **deep**: the kept deep model's clusters (``start_labels_[start_]``);
- **input**: the clusters of the input GMM (:func:`dcgmm_tf.starts.input_gmm`, the GMM the second start also starts
  from): a diagonal and, where affordable, a full-covariance GMM of the *scaled* training input, their clusters
  from EM at a variance floor of ``INPUT_GMM_COVARIANCE_FLOOR`` (1e-5); of the two the one whose clusters hold more
  of the answered pairs, or without pairs (or on a tie) the one of lower BIC at a floor of
  ``INPUT_GMM_CHOICE_FLOOR`` (1e-6).

**What is scored, on which data.** Each clustering is scored by the Gaussian mixture of the scaled training input
it implies (:func:`dcgmm_tf.paired_mixture.score_clusterings`): one M-step from its clusters, the covariances
with a prior of ``PRIOR_SAMPLES`` (1) pseudo-sample of the data's covariance, then one E-step with the pairs; the
score is F per sample, the C-ELBO's cluster and pair terms with the identity for encoder. The pairs are those the
deep model trained with (the answers and any copies spread to neighbours), weighed at :func:`pair_scale` of their
weight: ``PAIR_RATE`` times the pairs per training sample, at most 1. At full weight the score mostly counts the
training answers a clustering holds, which the deep model was trained to hold and the GMM was not.

**Margin.** None: the input's clustering is chosen when its score is strictly higher (``>``); a tie keeps the deep
model. Near ties happen: on iris with 100 pairs (seed 0, the defaults) the two scores agreed to four digits. Then
``labels_`` are the input mixture's posteriors *with the pairs at their full weight* (one more E-step,
:meth:`dcgmm_tf.paired_mixture.PairedMixture.with_pairs`), and ``predict`` its posteriors without pairs. Only for
the Gaussian likelihood: a Gaussian mixture of pixel values in [0, 1] is no rival to the Bernoulli decoder.

**The constants, where they were chosen and how much they move the result.** All were chosen on the benchmark's
tuning half (``studies.your_data_bench``, its Gaussian sets), the reporting half left to check them; "ARI" is the
mean adjusted Rand index of the returned clustering against the classes. "Halved and doubled" was measured once on 7
fits with the estimator's defaults (iris, breast_cancer, aniso_2d, classification_3, wine and blobs_5d with 100 pairs,
seed 0; iris with 500 pairs, seed 1), the deep model's clusters held fixed and the fallback (its input GMM
included) run again with the one constant changed: mean ARI 0.9181 with every constant as it is.

- ``PAIR_RATE`` = 0.03 (here). Chosen among the rates 0.005-0.05 per pair per sample and constant shares 0-1, each
  scored on the same 102 fits with pairs (``studies.fallback_weight``;
  studies/results/your_data_bench/fallback_weight.csv): on the tuning half it is within 1e-4 of the former constant
  share 3e-3 with 100 pairs and ahead with 500 (0.7525 / 0.8080 against 0.7526 / 0.8048 in that CSV), where the
  best constants with 500 pairs (0.1: 0.8294, full weight: 0.8288) lose with 100 (0.7433, 0.7476; full weight also
  0.021 on the reporting half). Its CSV neighbours: 0.02 gives 0.7528 / 0.8042, 0.05 0.7483 / 0.8225 (reporting
  half: 0.8484 / 0.8795 at 0.03, 0.8485 / 0.8795 at 0.02, 0.8514 / 0.8795 at 0.05). 0.05's lead with 500 pairs is
  one fit's (docstrings_libs seed 0: it keeps the deep model's ARI 0.847 where 0.03 takes the input's 0.389);
  without that fit 0.03 has the higher tuning mean. Halved (0.015) or doubled (0.06): no choice and no ARI moved on
  the 7 fits.
- ``PRIOR_SAMPLES`` = 1 (:mod:`dcgmm_tf.paired_mixture`). One pseudo-sample of the data's covariance keeps a nearly
  empty cluster's Gaussian from narrowing onto its few samples and lifting the deep model's score: ARI of the choice
  .779 -> .812 over 14 tuning fits against no prior; the full prior with the data's correlations against a diagonal
  one: 0.7510 -> 0.7540 without pairs, 0.7858 -> 0.7913 with 100 (commit messages of ``paired_mixture``). Halved:
  0.9153, doubled: 0.9207 on the 7 fits; no choice changed, the input mixture's labels moved on two (iris 0.960 ->
  0.941 / 0.980, aniso_2d 0.727 -> 0.726 / 0.725).
- ``INPUT_GMM_CHOICE_FLOOR`` = 1e-6 and ``INPUT_GMM_COVARIANCE_FLOOR`` = 1e-5 (:mod:`dcgmm_tf.starts`). The input
  GMM without pairs (``studies.covariance_floor``; studies/results/your_data_bench/covariance_floor.csv, 30 tuning
  fits) scored ARI 0.7199 with both at 1e-6, 0.7211 with the clusters from EM at 1e-5 (docstrings_libs 0.326 ->
  0.360, no set lower) and 0.7185 at 1e-4; one floor of 1e-5 for both 0.7008 (docstrings_tf's BIC then prefers the
  diagonal GMM that clusters documents by their length). The CSV steps by factors of ten. Either floor halved or
  doubled: no choice and no ARI moved on the 7 fits (the second start, which also starts from the input GMM, was not
  trained again).
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
from sklearn.mixture import GaussianMixture

from dcgmm_tf import paired_mixture
from dcgmm_tf.constraints import ConstraintSet

# The pairs' share of their weight in the score per pair per training sample (see the module's docstring).
PAIR_RATE = 0.03


@dataclasses.dataclass(frozen=True, eq=False)  # holds arrays: compared by identity
class FallbackChoice:
    """What the fallback chose (``chosen_``, ``mixture_scores_``, ``input_mixture_`` and ``labels_``).

    Attributes:
      chosen: "deep" or "input".
      scores: Each clustering's score by name (empty where the fallback does not apply).
      mixture: The input's mixture with the pairs at their full weight (None where the fallback does not apply).
      labels: The training samples' clusters of the chosen clustering.
    """

    chosen: str
    scores: dict[str, float]
    mixture: paired_mixture.PairedMixture | None
    labels: np.ndarray


def pair_scale(num_pairs: int, num_samples: int, rate: float = PAIR_RATE) -> float:
    """The share of their weight at which the fallback's score weighs ``num_pairs`` pairs trained on with
    ``num_samples`` samples: ``rate`` times the pairs per sample, at most 1 (their full weight).

    A few pairs among many samples the deep model can hold with clusters that are wrong elsewhere, so that holding
    them says little; pairs that touch much of the data it holds only with clusters that follow them. On the
    benchmark's tuning half the best constant share grew with the number of pairs (docs/your-data.md).

    Args:
      num_pairs: The pairs trained with.
      num_samples: The training samples.
      rate: The share per pair per sample.

    Returns:
      The share, in [0, 1].

    Raises:
      ValueError: On a negative count of pairs or rate, or no samples.
    """
    if num_pairs < 0 or num_samples < 1 or not rate >= 0:
        raise ValueError(f"need num_pairs >= 0, num_samples >= 1 and rate >= 0, got {num_pairs}, {num_samples}, {rate}")
    return min(1.0, rate * num_pairs / num_samples)


def choose(
    x: np.ndarray,
    constraints: ConstraintSet,
    clusterings: dict[str, np.ndarray],
    num_clusters: int,
    covariance_type: str,
    scale: float | None = None,
) -> tuple[str, dict[str, float], paired_mixture.PairedMixture]:
    """The fallback's comparison of ``clusterings["deep"]`` and ``clusterings["input"]`` (see the module's
    docstring).

    Args:
      x: The scaled training input.
      constraints: The pairs trained with.
      clusterings: The deep model's clusters ("deep") and the input GMM's ("input") of ``x``.
      num_clusters: K.
      covariance_type: The input GMM's covariance type, "diag" or "full".
      scale: The pairs' share of their weight in the score (None: :func:`pair_scale` of the pairs and samples).

    Returns:
      "input" where the input's mixture scores strictly higher, else "deep"; both scores; and the input's
      mixture, its posteriors under the pairs at their own weight.
    """
    if scale is None:
        scale = pair_scale(len(constraints), len(x))
    scored = paired_mixture.score_clusterings(x, constraints, clusterings, num_clusters, covariance_type, scale)
    scores = {name: mixture.objective for name, mixture in scored.items()}
    chosen = "input" if scores["input"] > scores["deep"] else "deep"
    return chosen, scores, scored["input"].with_pairs(x, constraints)


def choose_labels(
    x: np.ndarray,
    constraints: ConstraintSet,
    deep_labels: np.ndarray,
    input_gmm: GaussianMixture | None,
    input_labels: np.ndarray | None,
) -> FallbackChoice:
    """The estimator's fallback: :func:`choose` between ``deep_labels`` and ``input_labels`` (the clusters of
    ``input_gmm``) and the labels of the chosen; with a warning where that is the input's.

    Args:
      x: The scaled training input.
      constraints: The pairs trained with.
      deep_labels: The kept deep model's clusters of ``x``.
      input_gmm: The input GMM, or None where the fallback does not apply (then the deep model is kept).
      input_labels: Its clusters of ``x``.

    Returns:
      The choice.
    """
    if input_gmm is None:
        return FallbackChoice("deep", {}, None, deep_labels)
    num_clusters = input_gmm.n_components
    clusterings = {"deep": deep_labels, "input": input_labels}
    chosen, scores, mixture = choose(x, constraints, clusterings, num_clusters, input_gmm.covariance_type)
    if chosen == "deep":
        return FallbackChoice(chosen, scores, mixture, deep_labels)
    warnings.warn(
        "a Gaussian mixture of the input explains the data and pairs better than the deep model's clusters "
        f"(score {scores['input']:.4g} against {scores['deep']:.4g}); labels_ and predict come from it "
        "(input_fallback=False keeps the deep model)",
        stacklevel=4,  # this function, the estimator's fit, its fit context, the caller
    )
    return FallbackChoice(chosen, scores, mixture, mixture.probabilities.argmax(-1))
