"""Starts of the mixture: initial cluster means and variances from the pretrained embeddings.

Every strategy is a pure function of (embeddings, constraints, K, seed) and returns a :class:`ClusterStart`:

- :func:`gmm_start`: the paper's start, a diagonal Gaussian mixture with K components on mu(x).
- :func:`kmeans_start` (not the paper's): k-means with K centroids on mu(x), one diagonal Gaussian moment-matched
  to each cluster, no EM after it.
- :func:`merge_start`: over-cluster mu(x) into K' > K components, then merge the components greedily into K
  groups by the links between them.
- :func:`latent_class_start` (the runner's default): over-cluster mu(x), mapped by :func:`link_metric`, into K'
  components, then fit the class distribution p(c | a) of every component a to the observed links by EM (a
  latent class model of the pairs, :func:`fit_latent_classes`), and give each sample its most likely class.

The two constrained starts moment-match one diagonal Gaussian per group (:func:`moment_match`). Without
constraints every strategy but ``kmeans`` is :func:`gmm_start`. :func:`init_clusters` applies a start to a model;
:class:`dcgmm_tf.callbacks.ClusterRestart` applies it again during training.
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from scipy import linalg, sparse
from sklearn.cluster import KMeans
from sklearn.mixture import GaussianMixture
from threadpoolctl import threadpool_limits

from dcgmm_tf.config import LATENT_CLASS_STARTS, START_STRATEGIES
from dcgmm_tf.constraints import ConstraintSet, flip_probability
from dcgmm_tf.constraints.confidence import link_log_likelihood, link_log_probabilities
from dcgmm_tf.log_space import log_sum_exp
from dcgmm_tf.shims import InPlaceDiagonalGaussianMixture
from dcgmm_tf.validation import check_matrix


@dataclasses.dataclass(frozen=True)
class ClusterStart:
    """An initial mixture: ``means`` and ``variances`` of shape [K, D] and the cluster of each embedding."""

    means: np.ndarray
    variances: np.ndarray
    assignments: np.ndarray


def _check_embeddings(z: np.ndarray, num_clusters: int) -> np.ndarray:
    z = check_matrix(z, "embeddings")
    if not 1 <= num_clusters <= len(z):
        raise ValueError(f"num_clusters must be in [1, N={len(z)}], got {num_clusters}")
    return z


def default_components(num_clusters: int, num_samples: int) -> int:
    """K' when none is given: 10 K, but at most one component per 50 samples (and at least 2 K, at most N)."""
    return min(10 * num_clusters, max(2 * num_clusters, num_samples // 50), num_samples)


def _check_components(num_components: int | None, num_clusters: int, num_samples: int) -> int:
    if num_components is None:
        return default_components(num_clusters, num_samples)
    if not num_clusters <= num_components <= num_samples:
        raise ValueError(f"num_components (K') must be in [K={num_clusters}, N={num_samples}], got {num_components}")
    return num_components


def _check_constraints(constraints: ConstraintSet, num_samples: int) -> None:
    if constraints.num_samples != num_samples:
        raise ValueError(
            f"the constraints index {constraints.num_samples} samples but there are {num_samples} "
            "embeddings; they must index the same samples"
        )


def moment_match(
    z: np.ndarray, assignments: np.ndarray, num_clusters: int, min_variance: float = 1e-3
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of the embeddings of each cluster, shape [K, D] each (variances >= ``min_variance``).

    A cluster with fewer than two members gets the mean and variance of all embeddings.
    """
    z = np.asarray(z, np.float64)
    means = np.tile(z.mean(axis=0), (num_clusters, 1))
    variances = np.tile(z.var(axis=0), (num_clusters, 1))
    for k in range(num_clusters):
        members = z[assignments == k]
        if len(members) >= 2:
            means[k], variances[k] = members.mean(axis=0), members.var(axis=0)
    return means, np.maximum(variances, min_variance)


# A GMM or k-means start is fitted to at most this many embeddings (a random subset of larger data).
FIT_SAMPLES = 100_000
CHUNK = 100_000  # rows of the [N, K'] responsibilities held at once
# The latent class EM runs its starts side by side on the cores only from this many groups of pairs (pairs that
# share their components, link and flip probability): below it each iteration's numpy calls are too small for the
# threads to pay (measured on 2 cores: 300 pairs, 1.2 s side by side against 0.9 s one after the other).
PARALLEL_GROUPS = 1_000
# The input GMM's EM runs on one thread (OpenMP and BLAS) for at most this many entries (rows x features): on such
# data two threads cost more than they give, most of all beside TensorFlow's threads (docs/your-data.md).
ONE_THREAD_ENTRIES = 1_000_000


def _fit_gmm(z: np.ndarray, num_components: int, seed: int) -> GaussianMixture:
    """A diagonal GMM fitted to ``z`` (to at most ``FIT_SAMPLES`` of its rows, see :func:`_fit_subset`): scikit-learn's,
    with its E step in place (:class:`dcgmm_tf.shims.InPlaceDiagonalGaussianMixture`, the same fit to the bit)."""
    return InPlaceDiagonalGaussianMixture(n_components=num_components, covariance_type="diag", random_state=seed).fit(
        _fit_subset(z, seed)
    )


def _fit_subset(z: np.ndarray, seed: int) -> np.ndarray:
    """``z``, or ``FIT_SAMPLES`` of its rows drawn with ``seed`` when it has more: a start's fit then stops growing
    with N, and only the assignment of every row (linear in N) remains."""
    if len(z) > FIT_SAMPLES:
        z = z[np.sort(np.random.default_rng(seed).choice(len(z), FIT_SAMPLES, replace=False))]
    return z


def _chunks(num_rows: int) -> list[slice]:
    return [slice(start, min(num_rows, start + CHUNK)) for start in range(0, num_rows, CHUNK)]


def assign(fitted: GaussianMixture | KMeans, x: np.ndarray) -> np.ndarray:
    """The cluster of every row of ``x`` under a fitted GMM or k-means, ``CHUNK`` rows at a time."""
    return np.concatenate([fitted.predict(x[rows]) for rows in _chunks(len(x))])


def gmm_start(z: np.ndarray, num_clusters: int, seed: int = 0) -> ClusterStart:
    """The paper's start: a diagonal GMM with K components fitted to the embeddings."""
    z = _check_embeddings(z, num_clusters)
    gmm = _fit_gmm(z, num_clusters, seed)
    return ClusterStart(gmm.means_, gmm.covariances_, gmm.predict(z))


INPUT_GMM_INITS = 5  # the input-space start keeps the best of this many EM runs per covariance type
# ... and tries full covariances where F^2 times the rows fitted is at most this (one EM step then costs about as
# much as one of 50 features on FIT_SAMPLES rows): 100 features up to 25,000 rows, 50 up to FIT_SAMPLES
FULL_COVARIANCE_COST = 50**2 * FIT_SAMPLES
# EM's floor on each variance (scikit-learn's reg_covar), in units of the scaled features' variance, which is 1 ...
INPUT_GMM_COVARIANCE_FLOOR = 1e-5
# ... and the floor of the fits whose BIC chooses the covariance type
INPUT_GMM_CHOICE_FLOOR = 1e-6


def input_gmm(
    x: np.ndarray,
    num_clusters: int,
    seed: int = 0,
    spread: np.ndarray | None = None,
    constraints: ConstraintSet | None = None,
    covariance_floor: float = INPUT_GMM_COVARIANCE_FLOOR,
    choice_floor: float = INPUT_GMM_CHOICE_FLOOR,
) -> GaussianMixture:
    """The GMM of :func:`input_gmm_fits` (one per covariance type) whose clusters agree with more of the answered
    ``constraints`` (summed confidence, :func:`pair_agreement`); without pairs, or where they agree with as many,
    the one of lower BIC.

    The pairs choose because the likelihood can prefer a model of the features' shape to one of the classes: on
    tf-idf features a diagonal GMM can have the better BIC and held-out likelihood and cluster the documents by
    their length, not their topic (studies/README.md)."""
    fits = input_gmm_fits(x, num_clusters, seed, spread, covariance_floor, choice_floor)
    if constraints is None or not len(constraints):
        return fits[0]
    return max(fits, key=lambda gmm: pair_agreement(gmm, x, constraints))  # the first of the most agreement


def input_gmm_fits(
    x: np.ndarray,
    num_clusters: int,
    seed: int = 0,
    spread: np.ndarray | None = None,
    covariance_floor: float = INPUT_GMM_COVARIANCE_FLOOR,
    choice_floor: float = INPUT_GMM_CHOICE_FLOOR,
) -> list[GaussianMixture]:
    """GMMs fitted in the input space to at most ``FIT_SAMPLES`` rows of ``x`` [N, F], in the order of their BIC:
    a diagonal one and, where affordable (``FULL_COVARIANCE_COST``), a full-covariance one, each the better BIC of
    its EM runs (``INPUT_GMM_INITS``). The order is that of the types' fits at ``choice_floor``.

    ``spread`` [F] (optional) is each feature's spread before ``x`` was scaled. When the features had unequal
    spreads, EM also runs, per covariance type, on the features at their original relative spread (see
    :func:`_em_at_spread`), and that fit competes with the other by BIC. EM's likelihood does not depend on the
    features' scale but its k-means start does: tf-idf components, say, carry their signal in the spread that
    standardising removes.

    ``covariance_floor`` is added to every variance in EM (scikit-learn's ``reg_covar``), here in units of the
    scaled features' variance, so that the fit does not depend on the data's units as scikit-learn's fixed
    ``reg_covar`` of the raw features does. Where ``choice_floor`` differs, each type is fitted at both floors: the
    BIC of its fit at ``choice_floor`` orders the types, and its fit at ``covariance_floor`` is returned. On tf-idf
    features the BIC at the larger floor can prefer a diagonal GMM that clusters the documents by their length,
    while EM at the smaller floor can end on a cluster of fewer samples than features, whose covariance is singular
    but for the floor (studies/README.md)."""
    x = _check_embeddings(np.asarray(x, np.float64), num_clusters)
    subset = _fit_subset(x, seed)
    kinds = ("diag", "full") if x.shape[1] ** 2 * len(subset) <= FULL_COVARIANCE_COST else ("diag",)
    relative = None
    if spread is not None and np.ptp(spread) > 1e-6 * np.max(spread):
        relative = np.asarray(spread, np.float64) / np.mean(spread)
    best = []  # (BIC at choice_floor, fit at covariance_floor) of each covariance type
    with threadpool_limits(1 if subset.size <= ONE_THREAD_ENTRIES else None):
        for kind in kinds:
            chooser = _best_fit(subset, num_clusters, kind, seed, relative, choice_floor)
            if choice_floor != covariance_floor:
                fit = _best_fit(subset, num_clusters, kind, seed, relative, covariance_floor)
            else:
                fit = chooser
            best.append((chooser.bic(subset), fit))
    return [gmm for _, gmm in sorted(best, key=lambda scored: scored[0])]


def _best_fit(
    x: np.ndarray, num_clusters: int, kind: str, seed: int, relative: np.ndarray | None, covariance_floor: float
) -> GaussianMixture:
    """The GMM of ``x`` of one covariance type: the lower BIC of EM on ``x`` and, where ``relative`` is given,
    of :func:`_em_at_spread`."""
    fits = [_gmm(num_clusters, kind, seed, covariance_floor, n_init=INPUT_GMM_INITS).fit(x)]
    if relative is not None:
        fits.append(_em_at_spread(x, num_clusters, kind, seed, relative, covariance_floor))
    return min(fits, key=lambda gmm: gmm.bic(x))


def _gmm(num_clusters: int, kind: str, seed: int, covariance_floor: float, **init: Any) -> GaussianMixture:
    return GaussianMixture(num_clusters, covariance_type=kind, reg_covar=covariance_floor, random_state=seed, **init)


def _em_at_spread(
    x: np.ndarray, num_clusters: int, kind: str, seed: int, relative: np.ndarray, covariance_floor: float
) -> GaussianMixture:
    """A GMM of ``x`` [N, F] found by EM on ``x * relative`` (the best of ``INPUT_GMM_INITS`` runs), its weights,
    means and precisions carried over to ``x``'s scale, where EM goes on from them to convergence."""
    at_spread = _gmm(num_clusters, kind, seed, covariance_floor, n_init=INPUT_GMM_INITS).fit(x * relative)
    if kind == "diag":
        precisions = at_spread.precisions_ * relative**2
    else:
        precisions = at_spread.precisions_ * relative[None, :, None] * relative[None, None, :]
    return _gmm(
        num_clusters,
        kind,
        seed,
        covariance_floor,
        weights_init=at_spread.weights_,
        means_init=at_spread.means_ / relative,
        precisions_init=precisions,
    ).fit(x)


def pair_agreement(fitted: GaussianMixture | KMeans, x: np.ndarray, constraints: ConstraintSet) -> float:
    """The summed confidence |W_ij| of the answered pairs whose samples' clusters under ``fitted`` agree with the
    answer (same cluster for a must-link, different for a cannot-link); only the paired rows of ``x`` are
    assigned."""
    if not len(constraints):
        return 0.0
    rows = np.unique(np.concatenate([constraints.i, constraints.j]))
    clusters = np.full(constraints.num_samples, -1)  # the rows in no pair are never compared
    clusters[rows] = assign(fitted, x[rows])
    return float(np.abs(constraints.weight[constraints.satisfied(clusters)]).astype(np.float64).sum())


KMEANS_INITS = 10  # k-means runs from this many k-means++ seedings and keeps the one of least inertia


def kmeans_start(z: np.ndarray, num_clusters: int, seed: int = 0, min_variance: float = 1e-3) -> ClusterStart:
    """Not the paper's start: k-means with K centroids on the embeddings (the best of ``KMEANS_INITS`` runs), then
    one diagonal Gaussian per cluster by :func:`moment_match`.

    The GMM of :func:`gmm_start` starts from one k-means run and runs EM on. Without pairs, on standardised breast
    cancer, training from the k-means clusters ended at a higher ARI on 4 of 5 seeds, but lower on wine and on
    digits (studies/README.md), so it is an option, not a default.
    """
    z = _check_embeddings(z, num_clusters)
    kmeans = KMeans(num_clusters, n_init=KMEANS_INITS, random_state=seed).fit(_fit_subset(z, seed))
    assignments = assign(kmeans, z)
    means, variances = moment_match(z, assignments, num_clusters, min_variance)
    return ClusterStart(means, variances, assignments)


def _component_links(
    components: np.ndarray, constraints: ConstraintSet, num_components: int
) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric [K', K'] counts of must-links and of cannot-links between (and inside) components."""
    a, b = components[constraints.i], components[constraints.j]
    counts = []
    for mask in (constraints.must_link_mask, constraints.cannot_link_mask):
        m = np.zeros((num_components, num_components))
        np.add.at(m, (a[mask], b[mask]), 1.0)
        counts.append(m + m.T - np.diag(np.diag(m)))
    return counts[0], counts[1]


def merge_start(
    z: np.ndarray,
    constraints: ConstraintSet,
    num_clusters: int,
    num_components: int | None = None,
    seed: int = 0,
    min_variance: float = 1e-3,
) -> ClusterStart:
    """Over-clustering plus constraint-guided merging.

    A diagonal GMM with K' = ``num_components`` components (default: :func:`default_components`) is fitted to
    ``z``; starting from one group per component, the two groups with the largest (must-links - cannot-links
    between them) / sqrt(n_a n_b) are merged until K groups are left (ties: the pair of groups whose means are
    closest). One diagonal Gaussian per group is then fitted to its members.
    """
    z = _check_embeddings(z, num_clusters)
    num_components = _check_components(num_components, num_clusters, len(z))
    _check_constraints(constraints, len(z))
    components = _fit_gmm(z, num_components, seed).predict(z)
    must, cannot = _component_links(components, constraints, num_components)
    links = must - cannot
    sizes = np.bincount(components, minlength=num_components).astype(np.float64)
    sums = np.stack([z[components == a].sum(axis=0) for a in range(num_components)])
    group = np.arange(num_components)
    alive = sizes > 0
    if alive.sum() < num_clusters:
        raise ValueError(
            f"only {alive.sum()} of the {num_components} GMM components hold samples, fewer than "
            f"K={num_clusters}; the embeddings have too few distinct points"
        )
    while alive.sum() > num_clusters:
        idx = np.flatnonzero(alive)
        score = links[np.ix_(idx, idx)] / np.sqrt(np.outer(sizes[idx], sizes[idx]))
        centres = sums[idx] / sizes[idx, None]
        distance = ((centres[:, None, :] - centres[None, :, :]) ** 2).sum(-1)
        np.fill_diagonal(score, -np.inf)
        best = score == score.max()
        distance[~best] = np.inf
        p, q = np.unravel_index(np.argmin(distance), distance.shape)
        a, b = idx[p], idx[q]
        links[a] += links[b]
        links[:, a] += links[:, b]
        sizes[a] += sizes[b]
        sums[a] += sums[b]
        alive[b] = False
        group[group == b] = a
    labels = np.searchsorted(np.flatnonzero(alive), group)
    assignments = labels[components]
    means, variances = moment_match(z, assignments, num_clusters, min_variance)
    return ClusterStart(means, variances, assignments)


def _log_others(log_theta: np.ndarray) -> np.ndarray:
    """Log sum_{c' != c} theta[a, c'] for every (a, c), computed as a masked logsumexp (no cancellation)."""
    k = log_theta.shape[1]
    return log_sum_exp(np.where(np.eye(k, dtype=bool), -np.inf, log_theta[:, None, :]), axis=2)[..., 0]


def fit_latent_classes(
    a: np.ndarray,
    b: np.ndarray,
    must: np.ndarray,
    flip: np.ndarray,
    component_sizes: np.ndarray,
    num_clusters: int,
    seed: int = 0,
    n_init: int = LATENT_CLASS_STARTS,
    max_iter: int = 300,
    smoothing: float = 0.1,
    tol: float = 1e-7,
    warm_start: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """EM for a latent class model of the components: returns log p(c | a) [K', K] and the log-likelihood.

    Every sample has a class c ~ 1/K (DC-GMM's fixed prior) and lies in component a ~ theta_c. Pair n joins a
    sample of component ``a[n]`` and one of ``b[n]``; it is observed as a must-link when their classes agree,
    except that it is flipped with probability ``flip[n]``. The other samples (``component_sizes`` minus the pair
    ends) are observed through their component only; they make every class hold about 1/K of the data. The best
    of ``n_init`` random starts and of ``warm_start`` (counts [K', K] of samples per component and class, e.g.
    from the current clusters) is returned, by the largest likelihood per sample; ``smoothing`` pseudo-counts per
    (component, class) keep all probabilities positive.
    """
    if smoothing <= 0:
        raise ValueError(f"smoothing must be > 0, got {smoothing}")
    num_components = len(component_sizes)
    rng = np.random.default_rng(seed)
    log_same, log_diff = (log_p[:, None] for log_p in link_log_probabilities(must, flip))  # p(observation | ...)
    pairs = np.arange(len(a))
    ends = sparse.csr_matrix(
        (np.ones(2 * len(a)), (np.concatenate([a, b]), np.concatenate([pairs, pairs + len(a)]))),
        shape=(num_components, 2 * len(a)),
    )  # scatter-adds pair ends onto components
    free = np.maximum(component_sizes - np.asarray(ends.sum(axis=1)).ravel(), 0.0)[:, None]
    num_samples = free.sum() + 2 * len(a)
    # Pairs of the same two components, link and flip probability have the same posterior: the EM's elementwise
    # work runs once per such group (at most 2 K'^2 of them, however many pairs), and the per-pair values are
    # gathered back and summed over the pairs as before, so the result does not change by a bit.
    _, first, group = np.unique(np.stack([a, b, must, flip], axis=1), axis=0, return_index=True, return_inverse=True)
    group = group.ravel()
    per_end = np.concatenate([group, group + len(first)])  # the group of each row of ``ends``' columns
    a, b, log_same, log_diff = a[first], b[first], log_same[first], log_diff[first]
    starts = [rng.dirichlet(np.ones(num_clusters), num_components) * component_sizes[:, None] for _ in range(n_init)]
    if warm_start is not None:
        starts.insert(0, np.asarray(warm_start, np.float64))

    def run(start: np.ndarray) -> tuple[float, np.ndarray]:
        """EM from ``start`` to convergence: its log-likelihood per sample and its final counts."""
        counts = smoothing + start
        previous = -np.inf
        for _ in range(max_iter):
            log_theta = np.log(counts) - np.log(counts.sum(axis=0, keepdims=True))  # log p(a | c)
            log_others = _log_others(log_theta)
            theta_a, theta_b = log_theta[a], log_theta[b]
            # Log joint of each end's class with the observation: log theta_c[a] + log(w_same theta_c[b] + w_diff
            # sum_{c' != c} theta_c'[b]); the 1/K^2 of the class prior is added to the likelihood below.
            end_a = theta_a + link_log_likelihood(log_same, log_diff, theta_b, log_others[b])
            end_b = theta_b + link_log_likelihood(log_same, log_diff, theta_a, log_others[a])
            log_pair = log_sum_exp(end_a, axis=1)  # the same for both ends
            log_component = log_sum_exp(log_theta, axis=1)
            posterior = np.exp(np.concatenate([end_a, end_b]) - np.concatenate([log_pair, log_pair]))
            counts = smoothing + ends @ posterior[per_end] + free * np.exp(log_theta - log_component)
            log_lik = float((log_pair[group].sum() + (free * log_component).sum()) / num_samples - np.log(num_clusters))
            if log_lik - previous < tol:
                break
            previous = log_lik
        return log_lik, counts

    # The starts are independent: on enough pairs they run side by side on the cores (numpy's loops release the
    # GIL), and the best is chosen in their order as one after the other would.
    if len(first) >= PARALLEL_GROUPS:
        with ThreadPoolExecutor(min(len(starts), os.cpu_count() or 1)) as pool:
            fits = list(pool.map(run, starts))
    else:
        fits = [run(start) for start in starts]
    best_log_p, best_log_lik = None, -np.inf
    for log_lik, counts in fits:
        if log_lik > best_log_lik + 1e-5:  # a later start must be better by more than a tie: the warm one wins ties
            log_theta = np.log(counts) - np.log(counts.sum(axis=0, keepdims=True))
            best_log_p, best_log_lik = log_theta - log_sum_exp(log_theta, axis=1), log_lik
    return best_log_p, best_log_lik


def link_metric(z: np.ndarray, constraints: ConstraintSet) -> np.ndarray:
    """A linear map [D, D] of the embeddings under which cannot-linked pairs lie far apart and must-linked close.

    With A the second moment of the differences z_i - z_j over the must-links and B over the cannot-links, the
    map is V diag(sqrt(lambda)) for the generalised eigenproblem B v = lambda A v (V^T A V = I): must-link
    differences become white, and each direction is stretched by how much more cannot-links spread along it.
    A link type with fewer than 2 D pairs is replaced by random pairs (second moment 2 Cov(z)).
    """
    z = np.asarray(z, np.float64)
    dim = z.shape[1]
    fallback = 2.0 * np.atleast_2d(np.cov(z, rowvar=False))
    moments = []
    for mask in (constraints.must_link_mask, constraints.cannot_link_mask):
        d = z[constraints.i[mask]] - z[constraints.j[mask]]
        moments.append(d.T @ d / len(d) if len(d) >= 2 * dim else fallback)
    within, between = moments
    within = within + 1e-9 * np.trace(within) / dim * np.eye(dim)  # guard a singular moment
    lam, v = linalg.eigh(between, within)
    return v * np.sqrt(np.maximum(lam, 0.0))


def latent_class_start(
    z: np.ndarray,
    constraints: ConstraintSet,
    num_clusters: int,
    num_components: int | None = None,
    seed: int = 0,
    n_init: int = LATENT_CLASS_STARTS,
    flip: float | None = None,
    metric: bool = True,
    current: np.ndarray | None = None,
    min_variance: float = 1e-3,
) -> ClusterStart:
    """Over-clustering plus a latent class model of the links (see :func:`fit_latent_classes`).

    ``flip`` is the probability that a link is wrong; default: from each pair's confidence |W_ij| by the paper's
    heuristic (:func:`dcgmm_tf.constraints.flip_probability`). The EM runs from ``n_init`` random starts (see
    :data:`LATENT_CLASS_STARTS`) and keeps the best likelihood. With ``metric`` the over-clustering runs on the
    embeddings mapped by :func:`link_metric`. ``current`` ([N, K] cluster probabilities, e.g. of the model being
    restarted) adds its grouping of the components as one more EM start, so that a restart keeps the current
    clusters unless the links favour another grouping. Each sample takes the most likely class given its
    component responsibilities, sum_a p(a | z) p(c | a); one diagonal Gaussian per class is then fitted to its
    members.
    """
    z = _check_embeddings(z, num_clusters)
    num_components = _check_components(num_components, num_clusters, len(z))
    _check_constraints(constraints, len(z))
    if not len(constraints):
        raise ValueError("latent_class_start needs constraints; use gmm_start without them")
    if current is not None and np.shape(current) != (len(z), num_clusters):
        raise ValueError(
            f"current must hold cluster probabilities of shape {(len(z), num_clusters)}, got {np.shape(current)}"
        )
    mapped = z @ link_metric(z, constraints) if metric else z
    gmm = _fit_gmm(mapped, num_components, seed)
    # The [N, K'] responsibilities, CHUNK rows at a time: each sample's component, and the components' shares of
    # the current clusters (the warm start).
    components = np.empty(len(z), np.int64)
    warm = None if current is None else 0.0
    for part in _chunks(len(z)):
        responsibilities = gmm.predict_proba(mapped[part])
        components[part] = responsibilities.argmax(axis=1)
        if current is not None:
            warm = warm + responsibilities.T @ current[part]
    pair_flip = flip_probability(constraints.weight) if flip is None else np.full(len(constraints), float(flip))
    log_p, _ = fit_latent_classes(
        components[constraints.i],
        components[constraints.j],
        constraints.must_link_mask,
        pair_flip,
        np.bincount(components, minlength=num_components).astype(np.float64),
        num_clusters,
        seed=seed,
        n_init=n_init,
        warm_start=warm,
    )
    classes = np.exp(log_p)
    assignments = np.concatenate(
        [(gmm.predict_proba(mapped[part]) @ classes).argmax(axis=1) for part in _chunks(len(z))]
    )
    means, variances = moment_match(z, assignments, num_clusters, min_variance)
    return ClusterStart(means, variances, assignments)


def check_strategy(strategy: str) -> None:
    """Raise ``ValueError`` unless ``strategy`` is one of :data:`START_STRATEGIES`."""
    if strategy not in START_STRATEGIES:
        raise ValueError(f"strategy must be one of {START_STRATEGIES}, got {strategy!r}")


def cluster_start(
    z: np.ndarray,
    constraints: ConstraintSet | None,
    num_clusters: int,
    strategy: str = "latent_class",
    num_components: int | None = None,
    seed: int = 0,
    min_variance: float = 1e-3,
    current: np.ndarray | None = None,
    em_starts: int = LATENT_CLASS_STARTS,
) -> ClusterStart:
    """The start of ``strategy`` (one of :data:`START_STRATEGIES`) on embeddings ``z``.

    Without constraints (None or an empty set, as for VaDE) every strategy but ``kmeans`` (:func:`kmeans_start`, with
    or without them) is the paper's :func:`gmm_start`. ``current`` (cluster probabilities [N, K]) and ``em_starts``
    (the random starts of its EM) are used by ``latent_class`` only (see :func:`latent_class_start`).
    """
    check_strategy(strategy)
    if strategy == "kmeans":
        return kmeans_start(z, num_clusters, seed, min_variance)
    if strategy == "gmm" or constraints is None or not len(constraints):
        return gmm_start(z, num_clusters, seed)
    if strategy == "merge":
        return merge_start(z, constraints, num_clusters, num_components, seed, min_variance)
    return latent_class_start(
        z, constraints, num_clusters, num_components, seed, n_init=em_starts, current=current, min_variance=min_variance
    )


def init_clusters(
    model,
    x: np.ndarray,
    constraints: ConstraintSet | None = None,
    strategy: str = "latent_class",
    num_components: int | None = None,
    seed: int = 0,
    z: np.ndarray | None = None,
    em_starts: int = LATENT_CLASS_STARTS,
) -> ClusterStart:
    """Set ``model``'s cluster means and variances from the start of ``strategy`` on its embeddings mu(x) (``z``
    when computed already: the encoder's weights have not changed since).

    Call it after the autoencoder pretraining (:func:`dcgmm_tf.pretrain`), or during training to restart the
    mixture; ``constraints`` index the rows of ``x``. The model's current clusters p(c | x) are one of the
    candidate groupings of ``latent_class``, besides ``em_starts`` random ones. Returns the start (with the cluster
    of every row of ``x``).
    """
    current = model.cluster_probabilities(x) if strategy == "latent_class" else None
    start = cluster_start(
        model.embed(x) if z is None else z,
        constraints,
        model.num_clusters,
        strategy,
        num_components,
        seed,
        min_variance=2 * model.min_variance,
        current=current,
        em_starts=em_starts,
    )
    model.set_cluster_parameters(start.means, start.variances)
    return start
