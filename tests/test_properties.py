"""Property-based tests of the constraint store on small random cases."""

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dcgmm_tf.constraints import ConstraintSet
from tests.helpers import dense_matrix

SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def constraint_sets(draw, consistent=False):
    """A ConstraintSet over 2-12 samples. With ``consistent``, link signs follow hidden labels (so the
    transitive closure exists); otherwise each distinct pair gets a random sign and weight."""
    n = draw(st.integers(2, 12))
    pairs = draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda p: p[0] != p[1]), max_size=30)
    )
    weights = draw(st.lists(st.floats(1 / 64, 1e6, width=32), min_size=len(pairs), max_size=len(pairs)))
    if consistent:
        labels = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
        signs = [1 if labels[i] == labels[j] else -1 for i, j in pairs]
    else:
        signs = draw(st.lists(st.sampled_from([-1, 1]), min_size=len(pairs), max_size=len(pairs)))
    sign_of = {}  # one sign per unordered pair: conflicting duplicates are an error, tested elsewhere
    for (i, j), sign in zip(pairs, signs):
        sign_of.setdefault((min(i, j), max(i, j)), sign)
    i = np.array([p[0] for p in pairs], np.int64)
    j = np.array([p[1] for p in pairs], np.int64)
    w = np.array([sign_of[min(a, b), max(a, b)] * v for (a, b), v in zip(pairs, weights)], np.float32)
    return ConstraintSet(i, j, w, n)


def as_dict(constraints):
    return dict(zip(zip(constraints.i.tolist(), constraints.j.tolist()), constraints.weight.tolist()))


@SETTINGS
@given(constraint_sets())
def test_symmetry(c):
    assert np.all(c.i < c.j)
    keys = c.i * c.num_samples + c.j
    assert np.all(np.diff(keys) > 0)  # sorted, one entry per pair
    adjacency = c.adjacency.toarray()
    np.testing.assert_array_equal(adjacency, adjacency.T)
    np.testing.assert_array_equal(adjacency, dense_matrix(c))
    swapped = ConstraintSet(c.j, c.i, c.weight, c.num_samples)
    assert as_dict(swapped) == as_dict(c)


@SETTINGS
@given(constraint_sets(consistent=True))
def test_closure_is_idempotent_and_keeps_every_link(c):
    closed = c.transitive_closure()
    again = closed.transitive_closure()
    assert as_dict(again) == as_dict(closed)
    signs = {pair: np.sign(w) for pair, w in as_dict(closed).items()}
    assert all(signs[pair] == np.sign(w) for pair, w in as_dict(c).items())


@SETTINGS
@given(constraint_sets())
def test_csv_round_trip(c):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.csv"
        c.to_csv(path)
        back = ConstraintSet.from_csv(path, c.num_samples)
    np.testing.assert_array_equal(back.i, c.i)
    np.testing.assert_array_equal(back.j, c.j)
    np.testing.assert_array_equal(back.weight, c.weight)


@SETTINGS
@given(constraint_sets(), st.data())
def test_submatrix_equals_dense_computation(c, data):
    indices = np.array(data.draw(st.lists(st.integers(0, c.num_samples - 1), max_size=20)), np.int64)
    np.testing.assert_array_equal(c.submatrix(indices), dense_matrix(c)[np.ix_(indices, indices)])
