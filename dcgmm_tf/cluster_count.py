"""Choosing the number of clusters K from the pairs and the data (``n_clusters="auto"``, ``--num_clusters=0``).

With pairs, K is chosen by cross-validation over the pairs (``folds`` folds, each link type spread alike). For each
fold the embeddings are mapped by the link metric of the other pairs (:func:`dcgmm_tf.starts.link_metric`) and
a diagonal GMM with K components is fitted for each candidate K (of ``n_init`` starts the one that best explains the
fold's training pairs, :func:`pair_guided_gmm`), its weights held at 1/K by default, the prior DC-GMM trains with
(Sec. 2.4; :class:`EqualWeightGaussianMixture`; EM's fitted weights chose K - 1 or K + 1 on two of three
Fashion-MNIST seeds and on two of three digits seeds, studies/README.md); each held-out link is scored by its
log-likelihood under the GMM's cluster probabilities (kept with probability sum_k p(k|x_i) p(k|x_j), up to the
flip rate its confidence implies).
Too few clusters break held-out cannot-links, too many break held-out must-links, so with both link types the
smallest K whose mean score is within one standard error of the best is chosen (the one-standard-error rule; the
best score itself chose 11-15 for 10 classes, studies/README.md). Every candidate is scored on the same held-out
pairs, so the error is that of the paired differences to the best candidate (:func:`one_standard_error_band`): the
unpaired error of the best's mean, the textbook rule, counts the pairs' spread that all candidates share and chose
K - 1 on two of three Fashion-MNIST seeds.
Must-links alone cannot tell K from fewer clusters, and cannot-links alone K from more: then the largest (must) or
smallest (cannot) K whose score ties the best (within one standard error, or ``TOLERANCE`` of the candidates'
score range if more) is chosen, with a warning, as that choice follows how the GMM splits the embedding. Without
pairs the BIC of a diagonal GMM on the embeddings decides, with a warning: it follows the embedding's modes rather
than the classes (12 for 6 blobs, 22-30 of the candidates 2-30 for the 10 classes of digits and Fashion-MNIST). With
both link types, a choice at the largest candidate is warned about too. studies/README.md gives the measured choices.
Which pairs a split holds out can decide between neighbouring K (9 or 10 on Fashion-MNIST, about half the splits each
on two seeds of five): with ``splits`` > 1 the tie and its neighbours are scored again on more splits and chosen on
each pair's mean score (the runner's default, five), by the same rule or, with ``rule="best"`` (the runner's
default), as the best of them: averaged over five splits the best score took the true K on 27 of 29 fits against
24 (studies/README.md).

The embedding is the autoencoder's, before any pair has shaped it, and on digits it merged two digits (K = 9 for 10,
12 points of ACC lost). With ``fold_embedding`` each fold brings its own, e.g. the autoencoder tuned with that
fold's training pairs (the estimator's ``choice_tuning_epochs``), which separated them (K = 10). With both link types
and ``probe_epochs`` (an option, off by default), ``n_clusters="auto"`` then trains short probes at the chosen K and
its two neighbours on three quarters of the answers and scores each by the held-out quarter's log-likelihood
(:func:`probe_num_clusters`): trained with pairs, the model may split what the embedding merged, and held-out
must-links break when K is too large. Measured on digits, blobs and Fashion-MNIST (studies/README.md), the probes
moved K away from the true K as often as towards it (most held-out pairs are cannot-links, which favour one cluster
more), so they are not the default.

A latent class model of the pairs over a fine GMM (the start's :func:`dcgmm_tf.starts.fit_latent_classes`)
was tried first: its classes each hold 1/K of the data, so unequal clusters pushed its choice off (4 for 5 blobs of
sizes 1:3, 2 with must-links only).
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import logsumexp
from sklearn.mixture import GaussianMixture
from threadpoolctl import threadpool_limits

from dcgmm_tf.config import CHOICE_RULES, MIXTURE_WEIGHTS
from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.constraints.confidence import flip_probability, link_log_likelihood, link_log_probabilities
from dcgmm_tf.paired_mixture import log_joint
from dcgmm_tf.shims import EqualWeightGaussianMixture
from dcgmm_tf.starts import link_metric
from dcgmm_tf.validation import check_matrix

if TYPE_CHECKING:
    from dcgmm_tf.model import DCGMM

DEFAULT_CANDIDATES = tuple(range(2, 31))
SPLIT_SEED_STEP = 7919  # split s of the pairs into folds (and its GMMs) uses seed + s * SPLIT_SEED_STEP
TOLERANCE = 0.05  # share of the candidates' score range counted as a tie with the best (at least one error)
PROBE_HELD_OUT = 0.25  # share of each link type the probes are scored on
MIN_PROBE_PAIRS = 10  # probes need at least this many held-out pairs of each link type


@dataclasses.dataclass(frozen=True)
class ClusterCount:
    """The chosen K and the score of every candidate.

    Attributes:
      num_clusters: The chosen K.
      candidates: The candidate values of K.
      scores: Per candidate the mean held-out pair log-likelihood (with pairs, higher is better) or minus the
        BIC per sample (without pairs).
      errors: The standard error of each score (zero without pairs).
      criterion: ``"pairs"`` or ``"bic"``, or ``"probes"`` when trained probes made the choice.
      probed: The K of each trained probe (empty without probes).
      probe_scores: Each probe's mean held-out pair log-likelihood.
      rescored: The candidates scored again on more splits of the pairs into folds (``splits`` of
        :func:`choose_num_clusters`; empty with one split).
      rescored_scores: Their mean held-out pair log-likelihood over all splits.
      tied: The candidates (or probes) whose score ties the best's, within one standard error of the paired
        differences (both link types) or the one-type tolerance: the pairs do not tell them apart, and the choice is
        the smallest of them by the one-standard-error rule (the largest with must-links only; ``rule="best"``: the
        best). Empty for the BIC.
    """

    num_clusters: int
    candidates: tuple[int, ...]
    scores: tuple[float, ...]
    errors: tuple[float, ...]
    criterion: str
    probed: tuple[int, ...] = ()
    probe_scores: tuple[float, ...] = ()
    tied: tuple[int, ...] = ()
    rescored: tuple[int, ...] = ()
    rescored_scores: tuple[float, ...] = ()


def check_candidates(candidates: Sequence[int], num_samples: int) -> tuple[int, ...]:
    """The candidates as a sorted tuple; raises ``ValueError`` unless they are integers in [2, num_samples]."""
    candidates = list(candidates)
    integral = all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in candidates)
    values = tuple(sorted({int(k) for k in candidates})) if integral else ()
    if not values or values[0] < 2 or values[-1] > num_samples:
        raise ValueError(
            f"the candidate numbers of clusters must be integers in [2, {num_samples}] (the number of samples), "
            f"got {list(candidates)}"
        )
    return values


def mixture_class(weights: str) -> type[GaussianMixture]:
    """The GMM class of ``weights``: ``"equal"`` (:class:`EqualWeightGaussianMixture`) or ``"fitted"`` (EM's).

    Raises:
      ValueError: For any other value.
    """
    if weights not in MIXTURE_WEIGHTS:
        raise ValueError(f"weights must be one of {MIXTURE_WEIGHTS}, got {weights!r}")
    return EqualWeightGaussianMixture if weights == "equal" else GaussianMixture


def pair_log_likelihood(log_p_i: np.ndarray, log_p_j: np.ndarray, must: np.ndarray, flip: np.ndarray) -> np.ndarray:
    """Log-likelihood of each observed link given both ends' log class probabilities [P, K] and the flip rates.

    p(same) = sum_k p(k | i) p(k | j); a must-link has likelihood p(same) (1 - f) + (1 - p(same)) f, a cannot-link
    the complement; computed in log space from the log probabilities' logsumexp.
    """
    log_same = logsumexp(log_p_i + log_p_j, axis=1)
    log_diff = np.log(-np.expm1(np.minimum(log_same, -1e-12)))
    return link_log_likelihood(*link_log_probabilities(must, flip), log_same, log_diff)


def log_responsibilities(gmm: GaussianMixture, x: np.ndarray) -> np.ndarray:
    """Log p(k | x) [N, K] under a fitted diagonal GMM, in log space throughout.

    ``np.log(gmm.predict_proba(x))`` is -inf where a probability underflows; here
    log p(k | x) = log w_k + log N(x; mu_k, diag(var_k)) - logsumexp_k(...) stays finite.
    """
    if gmm.covariance_type != "diag":
        raise ValueError(f"a diagonal GMM is needed, got covariance_type={gmm.covariance_type!r}")
    joint = log_joint(
        x, gmm.weights_, np.asarray(gmm.means_, np.float64), np.asarray(gmm.covariances_, np.float64), "diag"
    )
    return joint - logsumexp(joint, axis=1, keepdims=True)


def pair_guided_gmm(
    z: np.ndarray,
    pairs: ConstraintSet,
    num_components: int,
    *,
    seed: int,
    starts: int,
    fit_rows: Any = slice(None),
    weights: str = "equal",
) -> np.ndarray:
    """Log p(k | z) [N, K] of the diagonal GMM, of ``starts`` fitted to ``z[fit_rows]``, that best explains ``pairs``.

    Each start is one EM run (seed ``seed + 1000 s`` for start s); the one kept gives the pairs the highest mean
    log-likelihood (:func:`pair_log_likelihood`). The data's likelihood, which scikit-learn's ``n_init`` keeps,
    often ranks highest a local optimum that splits a class and merges two others; the pairs tell them apart.
    ``weights``: ``"equal"`` holds the mixture weights at 1/K (:class:`EqualWeightGaussianMixture`), ``"fitted"``
    lets EM fit them.
    """
    mixture = mixture_class(weights)
    flip = flip_probability(pairs.weight)
    ends, index = np.unique(np.concatenate([pairs.i, pairs.j]), return_inverse=True)  # a start is scored on these
    end_i, end_j = index[: len(pairs)], index[len(pairs) :]
    best, best_gmm = -np.inf, None
    for start in range(starts):
        gmm = mixture(num_components, covariance_type="diag", random_state=seed + 1000 * start)
        log_p = log_responsibilities(gmm.fit(z[fit_rows]), z[ends])
        score = pair_log_likelihood(log_p[end_i], log_p[end_j], pairs.must_link_mask, flip).mean()
        if score > best:
            best, best_gmm = score, gmm
    return log_responsibilities(best_gmm, z)


def one_standard_error_band(values: np.ndarray) -> np.ndarray:
    """The candidates that tie the best by the one-standard-error rule on paired differences; the rule chooses the
    first (the smallest K).

    Args:
      values: [candidates, pairs], each held-out pair's score under each candidate, candidates in increasing K.

    Returns:
      The indices, increasing, of the candidates c with mean(d) >= -std(d) / sqrt(pairs) for
      d = values[c] - values[best], best (always among them) being the candidate with the highest mean score.
    """
    differences = values - values[np.argmax(values.mean(axis=1))]
    errors = differences.std(axis=1) / np.sqrt(values.shape[1])
    return np.flatnonzero(differences.mean(axis=1) >= -errors)


def choose_num_clusters(
    z: np.ndarray,
    constraints: ConstraintSet,
    candidates: Sequence[int] = DEFAULT_CANDIDATES,
    *,
    seed: int = 0,
    folds: int = 4,
    n_init: int = 10,
    max_samples: int = 10000,
    fold_embedding: Callable[[ConstraintSet], np.ndarray] | None = None,
    weights: str = "equal",
    splits: int = 1,
    rule: str = "one_se",
) -> ClusterCount:
    """Chooses K for embeddings ``z`` [N, D] and their constraints (see the module's docstring).

    Args:
      z: The embeddings, e.g. of the pretrained autoencoder.
      constraints: The pairs (fewer than ``2 * folds``: the BIC decides, with a warning).
      candidates: The values of K to choose from, each in [2, N].
      seed: Seed of the GMMs, the pair split and the latent class model's starts.
      folds: The pairs are split into this many folds; each fold is scored by the GMMs fitted with the others'
        link metric, so every pair is held out once.
      n_init: Starts of each GMM, each fitted once; the start whose cluster probabilities give the fold's
        training pairs the highest log-likelihood is kept (:func:`pair_guided_gmm`). Kept by the data's
        likelihood instead (scikit-learn's ``n_init``), three starts chose 10 / 12 / 9 on the Fashion-MNIST
        embeddings of studies/README.md, ten kept by the pairs 10 / 10 / 10.
      max_samples: The GMMs are fitted to at most this many samples, drawn with ``seed`` (the score uses all).
      fold_embedding: The embeddings [N, D] made with a fold's training pairs, called once per fold: e.g. the
        autoencoder tuned with them, as the fit then tunes it with all pairs, so that no held-out pair has shaped
        the embedding it is scored on. None: ``z`` for every fold.
      weights: The candidate GMMs' weights: ``"equal"`` (1/K, DC-GMM's prior) or ``"fitted"`` (EM's). The BIC
        without pairs always fits them.
      splits: Random splits of the pairs into folds (repeated cross-validation). With more than one and both link
        types, the candidates that tie the best on the first split, and their two neighbours, are scored again on
        ``splits - 1`` more splits (each with its own GMM seeds and fit rows), and ``rule`` chooses among them on
        each pair's score averaged over the splits: which pairs a split holds out decides
        between neighbouring K on Fashion-MNIST (studies/README.md).
      rule: With both link types: ``"one_se"``, the smallest K that ties the best (the one-standard-error rule),
        or ``"best"``, the K of the best mean score (with more ``splits``: on the scores averaged over them, among
        the first split's tie and its neighbours; on one split it chose 11-15 for 10 classes, studies/README.md).

    Returns:
      The chosen K with every candidate's score.

    Raises:
      ValueError: On candidates outside [2, N], fewer than 2 folds or splits, unknown ``weights`` or ``rule``, or
        non-finite embeddings.
    """
    mixture_class(weights)  # an unknown value is refused before any fold's work
    if rule not in CHOICE_RULES:
        raise ValueError(f"rule must be one of {CHOICE_RULES}, got {rule!r}")
    z = check_matrix(z, "embeddings", np.float64)
    candidates = check_candidates(candidates, len(z))
    if folds < 2:
        raise ValueError(f"folds must be at least 2, got {folds}")
    if splits < 1:
        raise ValueError(f"splits must be at least 1, got {splits}")
    if len(constraints) < 2 * folds:
        count = _by_bic(z[_fit_rows(np.random.default_rng(seed), len(z), max_samples)], candidates, seed)
        warnings.warn(
            f"fewer than {2 * folds} pairs: K={count.num_clusters} is chosen by the BIC of a GMM on the embedding, "
            "which follows its modes rather than classes (12 for 6 blobs, 22-30 for the 10 classes of digits and "
            "Fashion-MNIST, studies/README.md); give pairs of both link types, or the number of clusters",
            stacklevel=2,
        )
        return count  # not told to widen the range: the BIC's K is too large already
    score = functools.partial(
        held_out_values,
        z,
        constraints,
        folds=folds,
        n_init=n_init,
        max_samples=max_samples,
        fold_embedding=fold_embedding,
        weights=weights,
    )
    values = score(candidates, seed=seed)
    scores, errors = values.mean(axis=1), values.std(axis=1) / np.sqrt(len(constraints))
    best = int(np.argmax(scores))
    tied = one_standard_error_band(values)
    chosen = _chosen(scores, tied, rule)
    has_must, has_cannot = constraints.must_link_mask.any(), constraints.cannot_link_mask.any()
    if has_must != has_cannot:  # one link type bounds K from one side only
        tolerance = max(errors[best], TOLERANCE * (scores[best] - scores.min()))
        tied = np.flatnonzero(scores >= scores[best] - tolerance)
        chosen = int(tied.max() if has_must else tied.min())
        warnings.warn(
            f"only {'must' if has_must else 'cannot'}-links: they bound K from one side only, and the choice "
            f"(K={candidates[chosen]}) follows the embedding's GMM; give both link types for a reliable choice",
            stacklevel=2,
        )
    tied_k = tuple(candidates[i] for i in tied)
    count = ClusterCount(
        candidates[chosen], candidates, tuple(scores.tolist()), tuple(errors.tolist()), "pairs", tied=tied_k
    )
    if has_must != has_cannot:
        return count
    if splits > 1:
        window = np.arange(max(tied[0] - 1, 0), min(tied[-1] + 2, len(candidates)))  # the tie and its neighbours
        rescored = tuple(candidates[i] for i in window)
        total = values[window]
        for s in range(1, splits):
            total = total + score(rescored, seed=seed + s * SPLIT_SEED_STEP)
        mean = total / splits
        band, means = one_standard_error_band(mean), mean.mean(axis=1)
        count = dataclasses.replace(
            count,
            num_clusters=rescored[_chosen(means, band, rule)],
            tied=tuple(rescored[i] for i in band),
            rescored=rescored,
            rescored_scores=tuple(means.tolist()),
        )
    if len(candidates) > 1 and count.num_clusters == candidates[-1]:  # candidates are sorted: the largest
        warnings.warn(
            f"K={count.num_clusters} is the largest candidate, so a better K may lie above the range; widen it",
            stacklevel=2,
        )
    return count


def _chosen(scores: np.ndarray, tied: np.ndarray, rule: str) -> int:
    """The index ``rule`` picks: the first of the increasing ``tied`` ("one_se") or that of the best score."""
    return int(tied[0] if rule == "one_se" else np.argmax(scores))


def held_out_values(
    z: np.ndarray,
    constraints: ConstraintSet,
    candidates: Sequence[int],
    *,
    seed: int,
    folds: int,
    n_init: int,
    max_samples: int,
    fold_embedding: Callable[[ConstraintSet], np.ndarray] | None,
    weights: str,
) -> np.ndarray:
    """Each pair's held-out log-likelihood [candidates, pairs] on one split of the pairs into ``folds`` folds drawn
    with ``seed`` (the arguments as in :func:`choose_num_clusters`, whose first split this is)."""
    rng = np.random.default_rng(seed)
    fit_rows = _fit_rows(rng, len(z), max_samples)
    fold = np.zeros(len(constraints), np.int64)
    for mask in (constraints.must_link_mask, constraints.cannot_link_mask):  # each link type spread alike
        index = rng.permutation(np.flatnonzero(mask))
        fold[index] = np.arange(len(index)) % folds
    flip = flip_probability(constraints.weight)
    values = np.zeros((len(candidates), len(constraints)))
    for f in range(folds):
        held = fold == f
        train = constraints.subset(~held)
        fold_z = z if fold_embedding is None else _checked_embedding(fold_embedding(train), z.shape)
        mapped = fold_z @ link_metric(fold_z, train)
        i, j = constraints.i[held], constraints.j[held]
        # One BLAS thread: the GMMs' matrices are small, more threads made the choice slower (studies/README.md), and
        # the last digits would depend on the machine's cores.
        with threadpool_limits(1, user_api="blas"):
            for n, k in enumerate(candidates):
                log_p = pair_guided_gmm(
                    mapped, train, k, seed=seed + f, starts=n_init, fit_rows=fit_rows, weights=weights
                )
                values[n, held] = pair_log_likelihood(log_p[i], log_p[j], constraints.must_link_mask[held], flip[held])
    return values


def _fit_rows(rng: np.random.Generator, num_samples: int, max_samples: int) -> Any:
    """The rows the GMMs are fitted to: at most ``max_samples``, sorted, the first draw of ``rng``."""
    return np.sort(rng.choice(num_samples, max_samples, replace=False)) if num_samples > max_samples else slice(None)


def _checked_embedding(z: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``z`` as float64; raises ``ValueError`` unless it is finite and of ``shape``."""
    z = np.asarray(z, np.float64)
    if z.shape != shape or not np.isfinite(z).all():
        raise ValueError(f"a fold's embeddings must be a finite array of shape {shape}, got shape {z.shape}")
    return z


def held_out_mask(constraints: ConstraintSet, seed: int, fraction: float = PROBE_HELD_OUT) -> np.ndarray | None:
    """The pairs the probes are scored on: ``fraction`` of each link type, drawn with ``seed``.

    Returns:
      A boolean mask over ``constraints``, or None when the pairs cannot score probes: a link type missing, or
      fewer than ``MIN_PROBE_PAIRS`` of one held out.
    """
    rng = np.random.default_rng(seed)
    held = np.zeros(len(constraints), bool)
    for mask in (constraints.must_link_mask, constraints.cannot_link_mask):
        index = rng.permutation(np.flatnonzero(mask))
        count = int(round(fraction * len(index)))
        if count < MIN_PROBE_PAIRS:
            return None
        held[index[:count]] = True
    return held


def probe_candidates(count: ClusterCount) -> tuple[int, ...]:
    """The K the probes train: the chosen K and its neighbours among the candidates."""
    return tuple(k for k in count.candidates if abs(k - count.num_clusters) <= 1)


def choose_by_probes(count: ClusterCount, probed: Sequence[int], values: np.ndarray) -> ClusterCount:
    """``count`` with K chosen among the probes by the one-standard-error rule on their held-out scores.

    Args:
      count: The choice on the embedding.
      probed: The K of each probe, increasing.
      values: [probes, held-out pairs], each pair's log-likelihood under each probe (:func:`pair_log_likelihood`).

    Returns:
      The choice, with criterion ``"probes"``, each probe's mean score and the probes that tie the best.
    """
    tied = tuple(int(probed[i]) for i in one_standard_error_band(values))
    means = tuple(values.mean(axis=1).tolist())
    return dataclasses.replace(
        count, num_clusters=tied[0], criterion="probes", probed=tuple(probed), probe_scores=means, tied=tied
    )


def probe_num_clusters(
    count: ClusterCount,
    answers: ConstraintSet,
    x: np.ndarray,
    train_probe: Callable[[int, ConstraintSet], DCGMM],
    *,
    seed: int,
    spread: Callable[[ConstraintSet], ConstraintSet] = lambda pairs: pairs,
) -> ClusterCount:
    """``count`` refined by trained probes: the chosen K and its neighbours, each trained on three quarters of the
    answers and scored by the log-likelihood of the held-out quarter under its p(c|x).

    Args:
      count: The choice on the embedding (:func:`choose_num_clusters`).
      answers: The answered pairs (before any spreading to neighbours).
      x: The training inputs.
      train_probe: Trains a model with K clusters on the given pairs and returns it (a short schedule).
      seed: Seed of the held-out split.
      spread: Turns the training answers into the pairs the probes train on (e.g. spread to neighbours).

    Returns:
      The refined choice, or ``count`` itself when the pairs cannot score probes (one link type, too few pairs,
      the BIC's choice) or there is a single candidate.
    """
    probed = probe_candidates(count)
    held = held_out_mask(answers, seed) if count.criterion == "pairs" and len(probed) > 1 else None
    if held is None:
        return count
    train, test = spread(answers.subset(~held)), answers.subset(held)
    flip = flip_probability(test.weight)
    values = []
    for k in probed:
        model = train_probe(k, train)
        log_p = np.asarray(model.cluster_log_posterior(model.embed(x)), np.float64)
        values.append(pair_log_likelihood(log_p[test.i], log_p[test.j], test.must_link_mask, flip))
    return choose_by_probes(count, probed, np.array(values))


def _by_bic(z: np.ndarray, candidates: tuple[int, ...], seed: int) -> ClusterCount:
    scores = []
    for k in candidates:
        gmm = GaussianMixture(k, covariance_type="diag", random_state=seed).fit(z)
        scores.append(-gmm.bic(z) / len(z))
    best = int(np.argmax(scores))
    return ClusterCount(candidates[best], candidates, tuple(scores), (0.0,) * len(scores), "bic")
