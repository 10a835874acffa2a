"""Sparse pairwise constraints for constrained clustering.

The prior information of DC-GMM is a symmetric matrix `W` with `W[i, j] > 0`
for a must-link between samples `i` and `j`, `W[i, j] < 0` for a cannot-link
and `|W[i, j]|` the confidence in the constraint. `ConstraintSet` stores only
the non-zero upper-triangular entries, so memory is linear in the number of
pairs and never quadratic in the number of samples.

Modules: `store` (the `ConstraintSet` class), `canonical` (checking and
canonicalising pairs), `lookups` (the entries of batches' blocks), `confidence`
(`default_alpha`, `flip_probability`), `sampling` (drawing pairs from labels),
`csv_io` (constraint files), `closure` (transitive closure), `spread` (answers
spread to nearest neighbours), `arguments`
(`as_constraint_set`) and `arrays` (index validation). Dependencies point one way: `store` imports the others, which
work on plain arrays and never import `store`.
"""

from .arguments import as_constraint_set
from .confidence import default_alpha, flip_probability
from .sampling import LINK_TYPES, random_pairs
from .store import ConstraintSet

__all__ = ["LINK_TYPES", "ConstraintSet", "as_constraint_set", "default_alpha", "flip_probability", "random_pairs"]
