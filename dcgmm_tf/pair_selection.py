"""Active constraint selection: which pairs a person should label next.

Every strategy is a pure function of the embeddings mu(x) [N, D], the cluster posteriors p(k | x) [N, K] (and,
for ``disagree``, the inputs x), the constraints already known and a seed, and returns ``num_pairs`` new pairs
``[n, 2]`` (``i < j``, none already known, none twice). None of them looks at the N^2 pairs: candidates come from
nearest neighbours, components or clusters.

- ``random``: pairs drawn uniformly among the unknown ones (the paper's constraints; the control).
- ``uncertain``: the pairs about which the model is least sure that they share a cluster, s_ij = sum_k p(k|x_i)
  p(k|x_j) nearest 1/2, among candidates near cluster borders: each anchor with its nearest neighbours and with
  its nearest sample in its second most likely cluster. At most one pair per sample, and no pair of clusters
  takes more than its share, so one border does not use up the budget.
- ``explore``: the clusters with the fewest constrained samples per sample get the pairs; inside a cluster,
  samples far from its constrained ones (k-means++ sampling by squared distance) are paired with their nearest
  constrained sample, so the answers tell whether each part of the cluster belongs with the parts already known.
- ``consolidate``: the question the default start (``latent_class``) needs answered. The embeddings, mapped by
  the links' metric, are over-clustered into K' components (k-means); the latent class model of the known links
  gives each component's class distribution p(c | a) (as the start does, warm-started from the model's
  clusters). The components with the fewest must-links to other components come first; each is asked about the
  component it most likely shares a class with, s_ab = sum_c p(c|a) p(c|b), among those it has no link with yet,
  through typical members of both (among the nearest to the component's centre). A "yes" joins two parts of a
  class, a "no" corrects the model where it was surest.
- ``anchor``: the same components and beliefs, asked through anchors: one sample of each of the largest known
  must-link groups (and, for classes without one, the most typical member of the component surest of it), one per
  cluster. First the anchors not yet linked with each other, likeliest to share a class first (a "yes" merges two
  groups, a "no" separates them); then new samples, one per component in turn (largest first, nearest to the centre
  first), each with the anchor most likely of its class. Every answer places a new sample relative to a group the
  person has already seen, so the groups grow and the answers spread over many samples.
- ``disagree``: a second view, the inputs themselves. Nearest neighbours among the inputs' first principal
  components are mostly of one class; the pairs of them that the model puts in different clusters, nearest
  first (diverse as in ``uncertain``), are where the model most likely split a class.

:func:`suggest_pairs` computes the embeddings and posteriors of a trained model and calls :func:`select_pairs`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.neighbors import NearestNeighbors

from dcgmm_tf.config import LATENT_CLASS_STARTS
from dcgmm_tf.constraints import ConstraintSet, flip_probability
from dcgmm_tf.starts import default_components, fit_latent_classes, link_metric

SELECTION_STRATEGIES = ("random", "uncertain", "explore", "consolidate", "anchor", "disagree")
NUM_NEIGHBOURS = 10
MAX_ANCHORS = 10_000  # anchors of the nearest-neighbour candidates: the cost does not grow with N beyond this
MAX_EXPLORE_CANDIDATES = 3_000  # samples per cluster among which `explore` chooses
INPUT_COMPONENTS = 50  # `disagree` finds neighbours among the inputs' first principal components
TYPICAL_MEMBERS = 20  # `consolidate` asks through one of the this many members nearest to a component's centre
ANCHORS_PER_CLASS = 1  # `anchor` keeps this many anchors per cluster


class _Picked:
    """The pairs chosen so far, as keys ``i * N + j`` (``i < j``), with the known ones to avoid."""

    def __init__(self, constraints: ConstraintSet):
        self.n = constraints.num_samples
        self.known = set((constraints.i * self.n + constraints.j).tolist())
        self.pairs: list[tuple[int, int]] = []

    def add(self, i: int, j: int) -> bool:
        """Takes the pair (i, j) unless it links a sample to itself, is known or was taken; says whether it did."""
        i, j = (int(i), int(j)) if i < j else (int(j), int(i))
        key = i * self.n + j
        if i == j or key in self.known:
            return False
        self.known.add(key)
        self.pairs.append((i, j))
        return True

    def result(self) -> np.ndarray:
        return np.asarray(self.pairs, np.int64).reshape(-1, 2)


def _check(
    embeddings: np.ndarray, posteriors: np.ndarray, constraints: ConstraintSet, num_pairs: int, strategy: str
) -> None:
    if strategy not in SELECTION_STRATEGIES:
        raise ValueError(f"strategy must be one of {SELECTION_STRATEGIES}, got {strategy!r}")
    n = len(embeddings)
    if embeddings.ndim != 2 or posteriors.ndim != 2 or len(posteriors) != n:
        raise ValueError(
            f"embeddings [N, D] and posteriors [N, K] must have the same N, got shapes "
            f"{embeddings.shape} and {posteriors.shape}"
        )
    if not (np.all(np.isfinite(embeddings)) and np.all(np.isfinite(posteriors))):
        raise ValueError("embeddings and posteriors must be finite")
    if constraints.num_samples != n:
        raise ValueError(f"the constraints index {constraints.num_samples} samples, the embeddings {n}")
    unknown = n * (n - 1) // 2 - len(constraints)
    if not 1 <= num_pairs <= unknown:
        raise ValueError(f"num_pairs must be in [1, {unknown}] (the pairs not yet known), got {num_pairs}")


def _in_pairs(constraints: ConstraintSet) -> np.ndarray:
    """Whether each sample is an end of a known pair [N]."""
    ends = np.zeros(constraints.num_samples, bool)
    ends[constraints.i] = ends[constraints.j] = True
    return ends


def _random_pairs(num_samples: int, picked: _Picked, num_pairs: int, rng: np.random.Generator) -> None:
    """Adds uniformly drawn unknown pairs to ``picked`` until it holds ``num_pairs``."""
    while len(picked.pairs) < num_pairs:
        need = num_pairs - len(picked.pairs)
        for i, j in rng.integers(0, num_samples, size=(2 * need + 8, 2)):
            if len(picked.pairs) == num_pairs:
                break
            picked.add(i, j)


def _neighbour_candidates(z: np.ndarray, p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Candidate pairs [m, 2]: anchors with their nearest neighbours, and with their nearest sample of their
    second most likely cluster."""
    n = len(z)
    anchors = np.sort(rng.choice(n, min(n, MAX_ANCHORS), replace=False))
    k = min(NUM_NEIGHBOURS + 1, n)
    _, neighbours = NearestNeighbors(n_neighbors=k).fit(z).kneighbors(z[anchors])
    pairs = [np.stack([np.repeat(anchors, k), neighbours.ravel()], axis=1)]
    order = np.argsort(-p[anchors], axis=1)
    clusters = p.argmax(axis=1)
    if p.shape[1] > 1:
        second = order[:, 1]
        for cluster in np.unique(second):
            members = np.flatnonzero(clusters == cluster)
            asking = anchors[second == cluster]
            if len(members) == 0:
                continue
            _, nearest = NearestNeighbors(n_neighbors=1).fit(z[members]).kneighbors(z[asking])
            pairs.append(np.stack([asking, members[nearest[:, 0]]], axis=1))
    return np.concatenate(pairs)


def _take_diverse(candidates: np.ndarray, clusters: np.ndarray, picked: _Picked, num_pairs: int) -> None:
    """Adds ``candidates`` (pairs [m, 2], best first) to ``picked`` until it holds ``num_pairs``, at most one pair per
    sample and at most twice an even share of the pairs per pair of clusters."""
    k = int(clusters.max()) + 1
    cap = max(1, -(-num_pairs * 2 // (k * (k + 1) // 2)))
    used_samples = np.zeros(len(clusters), bool)
    per_cluster_pair: dict[tuple[int, int], int] = {}
    for i, j in candidates:
        if len(picked.pairs) == num_pairs:
            return
        if used_samples[i] or used_samples[j]:
            continue
        clusters_ij = tuple(sorted((int(clusters[i]), int(clusters[j]))))
        if per_cluster_pair.get(clusters_ij, 0) >= cap:
            continue
        if picked.add(i, j):
            used_samples[[i, j]] = True
            per_cluster_pair[clusters_ij] = per_cluster_pair.get(clusters_ij, 0) + 1


def _uncertain_pairs(z: np.ndarray, p: np.ndarray, picked: _Picked, num_pairs: int, rng: np.random.Generator) -> None:
    """Adds to ``picked`` the candidate pairs with s_ij nearest 1/2 (see the module docstring)."""
    candidates = _neighbour_candidates(z, p, rng)
    same = np.einsum("nk,nk->n", p[candidates[:, 0]], p[candidates[:, 1]])  # s_ij
    doubt = same * (1.0 - same)  # largest at s_ij = 1/2
    order = np.lexsort((rng.random(len(candidates)), -doubt))
    _take_diverse(candidates[order], p.argmax(axis=1), picked, num_pairs)


def _disagree_pairs(
    features: np.ndarray, p: np.ndarray, picked: _Picked, num_pairs: int, rng: np.random.Generator
) -> None:
    """Adds to ``picked`` nearest neighbours in the input space that the model puts in different clusters, the
    nearest first (see the module docstring)."""
    f = features.reshape(len(features), -1).astype(np.float32)
    n = len(f)
    dims = min(INPUT_COMPONENTS, f.shape[1], n)
    fitted = rng.choice(n, min(n, MAX_ANCHORS), replace=False)
    g = PCA(dims, svd_solver="randomized", random_state=int(rng.integers(2**31))).fit(f[fitted]).transform(f)
    anchors = np.sort(rng.choice(n, min(n, MAX_ANCHORS), replace=False))
    k = min(NUM_NEIGHBOURS + 1, n)
    distance, neighbours = NearestNeighbors(n_neighbors=k).fit(g).kneighbors(g[anchors])
    candidates = np.stack([np.repeat(anchors, k), neighbours.ravel()], axis=1)
    clusters = p.argmax(axis=1)
    cross = clusters[candidates[:, 0]] != clusters[candidates[:, 1]]
    candidates, distance = candidates[cross], distance.ravel()[cross]
    _take_diverse(candidates[np.lexsort((rng.random(len(candidates)), distance))], clusters, picked, num_pairs)


def _explore_pairs(
    z: np.ndarray, p: np.ndarray, constraints: ConstraintSet, picked: _Picked, num_pairs: int, rng: np.random.Generator
) -> None:
    """Adds to ``picked`` pairs in the clusters with the fewest constrained samples (see the module docstring)."""
    clusters = p.argmax(axis=1)
    k = p.shape[1]
    constrained = _in_pairs(constraints)
    sizes = np.bincount(clusters, minlength=k)
    covered = np.bincount(clusters[constrained], minlength=k).astype(float)
    quota = np.zeros(k, int)
    for _ in range(num_pairs - len(picked.pairs)):  # water-filling: the least covered cluster gets the next pair
        coverage = np.where(sizes > 1, (covered + quota) / np.maximum(sizes, 1), np.inf)
        quota[int(np.argmin(coverage))] += 1
    for cluster in np.flatnonzero(quota):
        members = np.flatnonzero(clusters == cluster)
        known = members[constrained[members]]
        if len(known) == 0:  # no constrained sample yet: start from the sample nearest to the cluster's mean
            known = members[[np.argmin(((z[members] - z[members].mean(0)) ** 2).sum(1))]]
        if len(members) > MAX_EXPLORE_CANDIDATES:
            members = np.sort(rng.choice(members, MAX_EXPLORE_CANDIDATES, replace=False))
        centres = list(known[:MAX_EXPLORE_CANDIDATES])
        nearest = NearestNeighbors(n_neighbors=1).fit(z[centres]).kneighbors(z[members])
        distance, partner = nearest[0][:, 0] ** 2, np.asarray(centres)[nearest[1][:, 0]]
        taken = 0
        while taken < quota[cluster] and distance.sum() > 0:
            pick = rng.choice(len(members), p=distance / distance.sum())  # k-means++ sampling
            if picked.add(members[pick], partner[pick]):
                taken += 1
            closer = ((z[members] - z[members[pick]]) ** 2).sum(1)  # the picked sample becomes a centre
            partner = np.where(closer < distance, members[pick], partner)
            distance = np.minimum(distance, closer)


class _Components(NamedTuple):
    """The embeddings over-clustered in the links' metric, with what the latent class model believes of each part."""

    labels: np.ndarray  # component of every sample [N]
    sizes: np.ndarray  # samples per component [K']
    theta: np.ndarray  # p(c | a), class distribution of every component [K', K]
    distance: np.ndarray  # squared distance of every sample to its component's centre, in the links' metric [N]


def _components(z: np.ndarray, p: np.ndarray, constraints: ConstraintSet, rng: np.random.Generator) -> _Components:
    """K' k-means components of the embeddings mapped by the links' metric and their class distributions, from the
    latent class model of the known links (as the default start computes them, warm-started from the model's
    clusters), or from the model's clusters alone when no link is known."""
    n, k = p.shape
    num_components = default_components(k, n)
    mapped = z @ link_metric(z, constraints) if len(constraints) else z
    kmeans = KMeans(num_components, n_init=1, random_state=int(rng.integers(2**31))).fit(mapped)
    labels = kmeans.labels_
    sizes = np.bincount(labels, minlength=num_components).astype(np.float64)
    counts = np.eye(num_components)[labels].T @ p  # samples per component and model cluster
    if len(constraints):
        log_p, _ = fit_latent_classes(
            labels[constraints.i],
            labels[constraints.j],
            constraints.must_link_mask,
            flip_probability(constraints.weight),
            sizes,
            k,
            seed=int(rng.integers(2**31)),
            n_init=LATENT_CLASS_STARTS,
            warm_start=counts,
        )
        theta = np.exp(log_p)
    else:
        theta = (counts + 1e-3) / (sizes[:, None] + k * 1e-3)
    distance = ((mapped - kmeans.cluster_centers_[labels]) ** 2).sum(1)
    return _Components(labels, sizes, theta, distance)


def _nearest_first(parts: _Components) -> list[np.ndarray]:
    """The members of every component, nearest to its centre first (ties in index order)."""
    order = np.lexsort((parts.distance, parts.labels))
    return np.split(order, np.cumsum(parts.sizes.astype(np.int64))[:-1])


def _consolidate_pairs(
    z: np.ndarray, p: np.ndarray, constraints: ConstraintSet, picked: _Picked, num_pairs: int, rng: np.random.Generator
) -> None:
    """Adds to ``picked`` pairs of typical members of components likely to share a class (see the module
    docstring)."""
    parts = _components(z, p, constraints, rng)
    num_components = len(parts.sizes)
    same = parts.theta @ parts.theta.T  # s_ab
    a, b = parts.labels[constraints.i], parts.labels[constraints.j]
    linked = np.zeros((num_components, num_components), bool)
    linked[a, b] = linked[b, a] = True
    np.fill_diagonal(linked, True)
    must = constraints.must_link_mask & (a != b)
    degree = np.bincount(np.concatenate([a[must], b[must]]), minlength=num_components)
    typical = [members[:TYPICAL_MEMBERS] for members in _nearest_first(parts)]
    order = np.lexsort((rng.random(num_components), degree))  # fewest must-links first, ties at random
    while len(picked.pairs) < num_pairs:
        asked = False
        for first in order:
            if len(picked.pairs) == num_pairs:
                return
            partners = np.where(linked[first], -np.inf, same[first])
            second = int(np.argmax(partners))
            if not np.isfinite(partners[second]) or not len(typical[first]) or not len(typical[second]):
                continue
            linked[first, second] = linked[second, first] = True
            asked |= picked.add(rng.choice(typical[first]), rng.choice(typical[second]))
        if not asked:  # every pair of components is linked: the rest is random
            return


def _anchors(
    parts: _Components, nearest: list[np.ndarray], constraints: ConstraintSet, num_anchors: int
) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``num_anchors`` anchor samples and their class distributions [A, K]: one member of each of the largest
    known must-link groups, then, for the classes the groups cover least, the most typical member of the component
    surest of that class (``nearest``: the members of every component, nearest to its centre first)."""
    n, k = len(parts.labels), parts.theta.shape[1]
    groups = constraints.must_link_components()
    ends = np.flatnonzero(_in_pairs(constraints))
    group_sizes = np.bincount(groups[ends], minlength=n)
    largest = np.flatnonzero(group_sizes >= 2)
    largest = largest[np.argsort(-group_sizes[largest], kind="stable")][:num_anchors]
    anchors, beliefs = [], []
    for group in largest:
        members = ends[groups[ends] == group]
        anchors.append(int(members[0]))
        beliefs.append(parts.theta[parts.labels[members]].mean(axis=0))
    covered = np.sum(beliefs, axis=0) if beliefs else np.zeros(k)
    large_enough = parts.sizes >= parts.sizes.mean() / 4  # an anchor stands for a real part of the data
    for c in np.argsort(covered, kind="stable"):
        if len(anchors) >= num_anchors:
            break
        component = int(np.argmax(parts.theta[:, c] * large_enough))
        anchor = int(nearest[component][0])
        if groups[anchor] not in groups[anchors]:  # not a second anchor of a group
            anchors.append(anchor)
            beliefs.append(parts.theta[component])
    return np.asarray(anchors, np.int64), np.asarray(beliefs).reshape(-1, k)


def _anchor_pairs(
    z: np.ndarray, p: np.ndarray, constraints: ConstraintSet, picked: _Picked, num_pairs: int, rng: np.random.Generator
) -> None:
    """Adds to ``picked`` pairs of anchors, then of new samples with anchors (see the module docstring)."""
    parts = _components(z, p, constraints, rng)
    nearest = _nearest_first(parts)
    anchors, beliefs = _anchors(parts, nearest, constraints, ANCHORS_PER_CLASS * p.shape[1])
    groups = constraints.must_link_components()
    n = len(groups)
    linked = np.concatenate(
        [groups[constraints.i] * n + groups[constraints.j], groups[constraints.j] * n + groups[constraints.i]]
    )  # groups with a link between them
    first, second = np.triu_indices(len(anchors), 1)
    group_a, group_b = groups[anchors[first]], groups[anchors[second]]
    ask = np.flatnonzero((group_a != group_b) & ~np.isin(group_a * n + group_b, linked))
    same = (beliefs @ beliefs.T)[first[ask], second[ask]]
    for m in ask[np.argsort(-same, kind="stable")]:  # the anchors likeliest to share a class first
        if len(picked.pairs) == num_pairs:
            return
        picked.add(anchors[first[m]], anchors[second[m]])
    constrained = _in_pairs(constraints)
    constrained[anchors] = True
    queues = [members[~constrained[members]] for members in nearest]  # the new samples, nearest to the centre first
    partner = anchors[np.argmax(parts.theta @ beliefs.T, axis=1)] if len(anchors) else None
    for position in range(max(map(len, queues), default=0)):
        for c in np.argsort(-parts.sizes, kind="stable"):  # one new sample per component in turn, largest first
            if len(picked.pairs) == num_pairs or partner is None:
                return
            if position < len(queues[c]):
                picked.add(queues[c][position], partner[c])


def select_pairs(
    embeddings: np.ndarray,
    posteriors: np.ndarray,
    constraints: ConstraintSet,
    num_pairs: int,
    strategy: str = "uncertain",
    seed: int = 0,
    features: np.ndarray | None = None,
) -> np.ndarray:
    """The ``num_pairs`` pairs [n, 2] (``i < j``, in the order chosen) that ``strategy`` asks about next.

    Args:
      embeddings: mu(x) of every sample, [N, D].
      posteriors: p(k | x) of every sample, [N, K].
      constraints: The pairs already known (never suggested again).
      num_pairs: How many pairs to suggest, at most the number of unknown pairs.
      strategy: One of :data:`SELECTION_STRATEGIES`.
      seed: Seed of the random choices; the same inputs and seed give the same pairs.
      features: The inputs x of every sample, [N, ...]; needed by ``disagree`` only.

    When a strategy finds fewer new candidates than asked (tiny data sets), random unknown pairs fill the rest.
    """
    z, p = np.asarray(embeddings, np.float64), np.asarray(posteriors, np.float64)
    _check(z, p, constraints, num_pairs, strategy)
    rng = np.random.default_rng(seed)
    picked = _Picked(constraints)
    if strategy == "uncertain":
        _uncertain_pairs(z, p, picked, num_pairs, rng)
    elif strategy == "explore":
        _explore_pairs(z, p, constraints, picked, num_pairs, rng)
    elif strategy == "consolidate":
        _consolidate_pairs(z, p, constraints, picked, num_pairs, rng)
    elif strategy == "anchor":
        _anchor_pairs(z, p, constraints, picked, num_pairs, rng)
    elif strategy == "disagree":
        if features is None or len(features) != len(z):
            raise ValueError("strategy disagree needs the inputs of every sample (features, [N, ...])")
        _disagree_pairs(np.asarray(features), p, picked, num_pairs, rng)
    _random_pairs(len(z), picked, num_pairs, rng)
    return picked.result()


def suggest_pairs(
    model,
    x: np.ndarray,
    constraints: ConstraintSet,
    num_pairs: int,
    strategy: str = "uncertain",
    seed: int = 0,
    batch_size: int = 1024,
) -> np.ndarray:
    """The next ``num_pairs`` pairs of rows of ``x`` to ask about, from a trained :class:`~dcgmm_tf.DCGMM`
    (its embeddings and cluster posteriors; see :func:`select_pairs`). ``constraints`` index the rows of ``x``."""
    posteriors = model.cluster_probabilities(x, batch_size)
    return select_pairs(model.embed(x, batch_size), posteriors, constraints, num_pairs, strategy, seed, features=x)


def answered(constraints: ConstraintSet, pairs: np.ndarray, labels: np.ndarray, weight: float) -> ConstraintSet:
    """``constraints`` with ``pairs`` added as answered by ``labels``: must-link (+weight) where the labels agree,
    cannot-link (-weight) where they differ. Simulates the person in experiments."""
    labels = np.asarray(labels)
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    signs = np.where(labels[pairs[:, 0]] == labels[pairs[:, 1]], 1.0, -1.0)
    return ConstraintSet(
        np.concatenate([constraints.i, pairs[:, 0]]),
        np.concatenate([constraints.j, pairs[:, 1]]),
        np.concatenate([constraints.weight, weight * signs]),
        constraints.num_samples,
    )
