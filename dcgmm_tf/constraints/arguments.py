"""Constraints as the scikit-learn-style ``fit`` methods take them: ``ml``/``cl`` pairs or a ``ConstraintSet``."""

from __future__ import annotations

from typing import Any

from .store import ConstraintSet


def as_constraint_set(
    num_samples: int, ml: Any = None, cl: Any = None, constraints: Any = None, weight: float = 1e4
) -> ConstraintSet:
    """The set of ``fit(X, ml=..., cl=...)`` (pairs of confidence ``weight``) or ``fit(X, constraints=...)``, checked
    against the ``num_samples`` rows of X; neither gives an empty set.

    Raises:
      ValueError: When both forms are given, the set indexes another number of samples, or a pair is invalid.
      TypeError: When ``constraints`` is not a ``ConstraintSet``.
    """
    if constraints is None:
        return ConstraintSet.from_pairs(num_samples, ml, cl, weight=weight)
    if ml is not None or cl is not None:
        raise ValueError("give the constraints either as ml/cl pairs or as a ConstraintSet, not both")
    if not isinstance(constraints, ConstraintSet):
        raise TypeError(f"constraints must be a dcgmm_tf.ConstraintSet, got {type(constraints).__name__}")
    if constraints.num_samples != num_samples:
        raise ValueError(f"the constraints index {constraints.num_samples} samples but X holds {num_samples}")
    return constraints
