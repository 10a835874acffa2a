"""Reference implementations in numpy, batch by batch, that the tf.data pipelines are tested against."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.data.pipeline import deal_groups, epoch_batches


def split_for_replicas(w: np.ndarray, num_replicas: int) -> list[np.ndarray]:
    """Positions of a batch shared out over ``num_replicas`` parts without cutting a constraint.

    ``w`` is the batch's B x B constraint submatrix. Samples linked (directly or through other samples of
    the batch) stay in one part; the linked groups are dealt largest first to the smallest part
    (:func:`deal_groups`), so the parts are as equal as the groups allow. A part is empty only when the batch
    has fewer groups than parts. Positions within a part keep their batch order.
    """
    _, group = csgraph.connected_components(sparse.csr_matrix(w != 0), directed=False)
    part = deal_groups(np.bincount(group), num_replicas)[group]
    return [np.flatnonzero(part == r) for r in range(num_replicas)]


def epoch_elements(
    x: np.ndarray,
    constraints: ConstraintSet,
    batch_size: int,
    rng: np.random.Generator,
    layout: str = "separate",
    num_replicas: int = 1,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The ``(x_batch, W_batch)`` of one epoch's batches (:func:`epoch_batches`), computed batch by batch.

    With ``num_replicas`` R > 1 every batch comes as R consecutive parts, one per replica
    (:func:`split_for_replicas`): no constraint between two samples of the batch is cut, so the parts' W blocks
    hold all of the batch's constraints.
    """
    for idx in epoch_batches(len(x), constraints, batch_size, rng, layout):
        w = constraints.submatrix(idx)
        if num_replicas == 1:
            yield x[idx], w
            continue
        for part in split_for_replicas(w, num_replicas):
            yield x[idx[part]], w[np.ix_(part, part)]
