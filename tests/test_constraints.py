"""Tests for dcgmm_tf.constraints."""

import dataclasses
import math
import time

import numpy as np
import pytest

from dcgmm_tf.constraints import LINK_TYPES, ConstraintSet, default_alpha
from tests.helpers import dense_matrix


def _pairs(constraints):
    return set(zip(constraints.i.tolist(), constraints.j.tolist()))


# ----------------------------------------------------------------- alpha ---


def test_default_alpha_values():
    assert LINK_TYPES == ("both", "must", "cannot")
    assert default_alpha(0.0) == 1e4
    assert default_alpha(0.1) == pytest.approx(1000 * math.log(9))
    assert default_alpha(0.2) == pytest.approx(1000 * math.log(4))


@pytest.mark.parametrize("q", [-0.1, 0.5, 0.7, float("nan")])
def test_default_alpha_rejects_bad_q(q):
    with pytest.raises(ValueError, match="q must be in"):
        default_alpha(q)


# ----------------------------------------------------------- constructor ---


def test_constructor_normalises_and_sorts_pairs():
    c = ConstraintSet([4, 1, 0], [2, 3, 4], [1.0, -2.0, 3.0], num_samples=5)
    np.testing.assert_array_equal(c.i, [0, 1, 2])
    np.testing.assert_array_equal(c.j, [4, 3, 4])
    np.testing.assert_array_equal(c.weight, [3.0, -2.0, 1.0])
    assert c.i.dtype == np.int64 and c.j.dtype == np.int64
    assert c.weight.dtype == np.float32
    assert len(c) == 3 and c.num_samples == 5
    np.testing.assert_array_equal(c.must_link_mask, [True, False, True])
    np.testing.assert_array_equal(c.cannot_link_mask, [False, True, False])
    with pytest.raises(ValueError):
        c.i[0] = 3  # Read-only: the cached adjacency must stay valid.


def test_constructor_accepts_integral_floats():
    c = ConstraintSet(np.array([0.0, 2.0]), np.array([1.0, 1.0]), [1, -1], 3)
    assert _pairs(c) == {(0, 1), (1, 2)}


def test_duplicates_keep_largest_weight():
    c = ConstraintSet([3, 1, 0, 2], [1, 3, 2, 0], [-2.0, -5.0, 1.0, 4.0], 4)
    assert _pairs(c) == {(1, 3), (0, 2)}
    assert dict(zip(zip(c.i.tolist(), c.j.tolist()), c.weight.tolist())) == {
        (0, 2): 4.0,
        (1, 3): -5.0,
    }


def test_conflicting_duplicates_raise_naming_pair():
    with pytest.raises(ValueError, match=r"\(1, 3\).*must-link.*cannot-link"):
        ConstraintSet([0, 3, 1], [2, 1, 3], [1.0, -1.0, 2.0], 4)


@pytest.mark.parametrize(
    "i, j, w, n, match",
    [
        ([0], [5], [1.0], 5, "outside"),
        ([-1], [2], [1.0], 5, "outside"),
        ([2], [2], [1.0], 5, "itself"),
        ([0], [1], [0.0], 5, "non-zero"),
        ([0], [1], [np.nan], 5, "finite"),
        ([0], [1], [np.inf], 5, "finite"),
        ([0], [1], [1e40], 5, "finite"),  # Overflows float32.
        ([0.5], [1], [1.0], 5, "integers"),
        ([0, 1], [1], [1.0, 1.0], 5, "same length"),
        ([[0]], [[1]], [[1.0]], 5, "1-D"),
        ([0], [1], [1.0], 0, "positive integer"),
        ([0], [1], ["a"], 5, "numeric"),
    ],
)
def test_constructor_validation(i, j, w, n, match):
    with pytest.raises(ValueError, match=match):
        ConstraintSet(i, j, w, n)


def test_empty():
    c = ConstraintSet.empty(10)
    assert len(c) == 0 and c.num_samples == 10
    assert c.submatrix([1, 2, 3]).shape == (3, 3)
    assert not c.submatrix([1, 2, 3]).any()


def test_subset():
    c = ConstraintSet([0, 1, 2], [1, 2, 3], [1.0, -1.0, 2.0], 4)
    s = c.subset(c.must_link_mask)
    assert _pairs(s) == {(0, 1), (2, 3)}
    assert _pairs(c.subset([1])) == {(1, 2)}
    with pytest.raises(ValueError, match="shape"):
        c.subset(np.array([True, False]))


# ----------------------------------------------------------- from_labels ---


@pytest.fixture(name="labels")
def fixture_labels():
    return np.random.default_rng(0).integers(0, 10, size=5000)


def test_from_labels_link_types_match_labels(labels):
    c = ConstraintSet.from_labels(labels, 3000, seed=1)
    assert len(c) == 3000  # Distinct pairs: duplicates would have merged.
    assert c.num_samples == labels.size
    assert np.all(c.i < c.j)
    same = labels[c.i] == labels[c.j]
    np.testing.assert_array_equal(c.must_link_mask, same)
    np.testing.assert_array_equal(np.abs(c.weight), 1e4)
    assert 0.05 < same.mean() < 0.15  # About 1/10 for 10 balanced classes.


def test_from_labels_noise_rate(labels):
    q = 0.2
    c = ConstraintSet.from_labels(labels, 20_000, q=q, seed=2)
    assert len(c) == 20_000
    wrong = c.must_link_mask != (labels[c.i] == labels[c.j])
    assert abs(wrong.mean() - q) < 0.015
    np.testing.assert_allclose(np.abs(c.weight), default_alpha(q), rtol=1e-6)


def test_from_labels_custom_alpha(labels):
    c = ConstraintSet.from_labels(labels, 10, alpha=3.5)
    np.testing.assert_array_equal(np.abs(c.weight), 3.5)


@pytest.mark.parametrize("link_type", ["must", "cannot"])
def test_from_labels_single_link_type(labels, link_type):
    c = ConstraintSet.from_labels(labels, 2000, link_type=link_type, seed=3)
    assert len(c) == 2000
    same = labels[c.i] == labels[c.j]
    if link_type == "must":
        assert c.must_link_mask.all() and same.all()
    else:
        assert c.cannot_link_mask.all() and not same.any()


@pytest.mark.parametrize("link_type", ["must", "cannot"])
def test_from_labels_single_link_type_with_noise(labels, link_type):
    c = ConstraintSet.from_labels(labels, 5000, link_type=link_type, q=0.2, seed=4)
    assert len(c) == 5000
    mask = c.must_link_mask if link_type == "must" else c.cannot_link_mask
    assert mask.all()
    wrong = c.must_link_mask != (labels[c.i] == labels[c.j])
    assert abs(wrong.mean() - 0.2) < 0.03


def test_from_labels_is_seeded(labels):
    a = ConstraintSet.from_labels(labels, 100, seed=5)
    b = ConstraintSet.from_labels(labels, 100, seed=5)
    c = ConstraintSet.from_labels(labels, 100, seed=6)
    assert _pairs(a) == _pairs(b)
    assert _pairs(a) != _pairs(c)


def test_from_labels_can_draw_every_pair():
    labels = np.array([0, 0, 1, 1, 1])
    assert len(_pairs(ConstraintSet.from_labels(labels, 10))) == 10
    must = ConstraintSet.from_labels(labels, 4, link_type="must")
    assert _pairs(must) == {(0, 1), (2, 3), (2, 4), (3, 4)}
    cannot = ConstraintSet.from_labels(labels, 6, link_type="cannot")
    assert _pairs(cannot) == {(a, b) for a in (0, 1) for b in (2, 3, 4)}


def test_from_labels_rare_eligible_pairs():
    # 100,000 samples, only 10 same-label pairs among ~5e9: no slow rejection.
    labels = np.arange(100_000)
    labels[1::10_000] = labels[::10_000]
    for seed in range(3):
        start = time.process_time()
        c = ConstraintSet.from_labels(labels, 4, link_type="must", seed=seed)
        assert time.process_time() - start < 2.0
        assert len(c) == 4 and np.all(labels[c.i] == labels[c.j])


def test_from_labels_dense_request_is_fast():
    labels = np.zeros(1500, np.int64)
    start = time.process_time()  # CPU time: a loaded machine does not fail it
    c = ConstraintSet.from_labels(labels, 1500 * 1499 // 2, link_type="must")
    assert time.process_time() - start < 3.0
    assert len(c) == 1500 * 1499 // 2


@pytest.mark.parametrize(
    "count, link_type, match",
    [(11, "both", "only 10"), (5, "must", "only 4"), (7, "cannot", "only 6")],
)
def test_from_labels_impossible_requests(count, link_type, match):
    labels = np.array([0, 0, 1, 1, 1])
    with pytest.raises(ValueError, match=match):
        ConstraintSet.from_labels(labels, count, link_type=link_type)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(link_type="some"), "link_type"),
        (dict(q=0.5), "q must be in"),
        (dict(alpha=0.0), "alpha"),
        (dict(alpha=float("inf")), "alpha"),
        (dict(q=0.1, transitive_closure=True), "transitive_closure"),
        (dict(num_constraints=-1), "non-negative"),
    ],
)
def test_from_labels_argument_validation(labels, kwargs, match):
    kwargs = {"num_constraints": 10, **kwargs}
    with pytest.raises(ValueError, match=match):
        ConstraintSet.from_labels(labels, **kwargs)


def test_from_labels_with_closure(labels):
    drawn = ConstraintSet.from_labels(labels[:200], 300, seed=7)
    closed = ConstraintSet.from_labels(labels[:200], 300, seed=7, transitive_closure=True)
    assert _pairs(closed) == _pairs(drawn.transitive_closure())
    assert _pairs(drawn) < _pairs(closed)
    same = labels[closed.i] == labels[closed.j]
    np.testing.assert_array_equal(closed.must_link_mask, same)


# ------------------------------------------------------------- closure ---


def test_must_link_components_hand_made():
    # Must-links 0-1-2 and 4-5; the cannot-links 2/4 and 3/6 join nothing; 7 is unconstrained.
    c = ConstraintSet([0, 1, 4, 2, 3], [1, 2, 5, 4, 6], [1, 2, 1, -3, -1], 8)
    components = c.must_link_components()
    assert components.shape == (8,)
    groups = {}
    for sample, label in enumerate(components.tolist()):
        groups.setdefault(label, []).append(sample)
    assert sorted(groups.values()) == [[0, 1, 2], [3], [4, 5], [6], [7]]
    assert c.must_link_components() is components  # Computed once per set.
    with pytest.raises(ValueError):
        components[0] = 7  # Read-only: the cache must stay valid.
    assert len(set(ConstraintSet.empty(4).must_link_components().tolist())) == 4


def test_transitive_closure_hand_made():
    # Must-links 0-1-2 and 4-5; cannot-links 2/4 and 3/6.
    c = ConstraintSet([0, 1, 4, 2, 3], [1, 2, 5, 4, 6], [1, 2, 1, -3, -1], 7)
    closed = c.transitive_closure()
    must = _pairs(closed.subset(closed.must_link_mask))
    cannot = _pairs(closed.subset(closed.cannot_link_mask))
    assert must == {(0, 1), (0, 2), (1, 2), (4, 5)}
    assert cannot == {(a, b) for a in (0, 1, 2) for b in (4, 5)} | {(3, 6)}
    np.testing.assert_array_equal(np.abs(closed.weight), 3.0)
    again = closed.transitive_closure()
    assert _pairs(again) == _pairs(closed)
    np.testing.assert_array_equal(again.weight, closed.weight)


def test_transitive_closure_conflict_names_pair():
    c = ConstraintSet([0, 1, 0], [1, 2, 2], [1.0, 1.0, -1.0], 6)
    with pytest.raises(ValueError, match=r"Cannot-link \(0, 2\)"):
        c.transitive_closure()


def test_transitive_closure_consistent_set_passes():
    c = ConstraintSet([0, 1, 5], [1, 2, 2], [1.0, 1.0, -1.0], 6)
    assert "must_links=3, cannot_links=3" in repr(c.transitive_closure())
    assert len(ConstraintSet.empty(3).transitive_closure()) == 0


# ----------------------------------------------------------------- CSV ---


def test_csv_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    i = rng.integers(0, 1000, 500)
    j = (i + rng.integers(1, 1000, 500)) % 1000
    w = rng.normal(size=500).astype(np.float32) * 1e3
    c = ConstraintSet(i, j, w, 1000)
    c.to_csv(tmp_path / "c.csv")
    assert (tmp_path / "c.csv").read_text().startswith("i,j,weight\n")
    d = ConstraintSet.from_csv(tmp_path / "c.csv", 1000)
    np.testing.assert_array_equal(d.i, c.i)
    np.testing.assert_array_equal(d.j, c.j)
    np.testing.assert_array_equal(d.weight, c.weight)


def test_csv_round_trip_empty(tmp_path):
    ConstraintSet.empty(4).to_csv(tmp_path / "c.csv")
    assert len(ConstraintSet.from_csv(tmp_path / "c.csv", 4)) == 0


def test_csv_column_order_extra_columns_and_blank_lines(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("weight,note,j,i\n-2.5,x,3,1\n\n1e3,y,0,4.0\n")
    c = ConstraintSet.from_csv(path, 5)
    assert _pairs(c) == {(1, 3), (0, 4)}
    np.testing.assert_array_equal(c.weight, [1000.0, -2.5])


@pytest.mark.parametrize(
    "row, match",
    [
        ("a,1,1.0", "'a' is not a number"),
        ("0,,1.0", "missing value for 'j'"),
        ("0,1", "missing value for 'weight'"),
        ("1.5,2,1.0", "not an integer"),
        ("-1,2,1.0", "negative"),
        ("0,10,1.0", "out of range"),
        ("3,3,1.0", "i == j"),
        ("0,1,0", "non-zero"),
        ("0,1,nan", "finite"),
        ("0,1,inf", "finite"),
        ("0,1,abc", "not a number"),
    ],
)
def test_csv_bad_rows_name_line(tmp_path, row, match):
    path = tmp_path / "c.csv"
    path.write_text(f"i,j,weight\n0,2,1.0\n{row}\n")
    with pytest.raises(ValueError, match=f"line 3: .*{match}"):
        ConstraintSet.from_csv(path, 10)


def test_csv_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.csv"):
        ConstraintSet.from_csv(tmp_path / "missing.csv", 10)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError, match="empty"):
        ConstraintSet.from_csv(tmp_path / "empty.csv", 10)
    (tmp_path / "header.csv").write_text("i,k,weight\n0,1,1\n")
    with pytest.raises(ValueError, match=r"line 1: .*\['j'\]"):
        ConstraintSet.from_csv(tmp_path / "header.csv", 10)
    (tmp_path / "conflict.csv").write_text("i,j,weight\n0,1,1\n1,0,-1\n")
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        ConstraintSet.from_csv(tmp_path / "conflict.csv", 10)


# ----------------------------------------------------------- submatrix ---


@pytest.mark.parametrize("seed", range(5))
def test_submatrix_matches_dense_reference(seed):
    rng = np.random.default_rng(seed)
    n = 30
    i, j = rng.integers(0, n, 200), rng.integers(0, n, 200)
    keep = i != j
    w = rng.choice([-1.0, 1.0], 200) * rng.uniform(0.5, 2.0, 200)
    # Random signs may give conflicting duplicates: keep one entry per pair.
    key = np.minimum(i, j) * n + np.maximum(i, j)
    keep &= np.isin(np.arange(200), np.unique(key, return_index=True)[1])
    c = ConstraintSet(i[keep], j[keep], w[keep], n)
    dense = dense_matrix(c)
    indices = rng.integers(0, n, 40)  # 40 draws from 30 samples: repeats.
    sub = c.submatrix(indices)
    assert sub.dtype == np.float32 and sub.shape == (40, 40)
    np.testing.assert_array_equal(sub, dense[indices][:, indices])
    same_sample = indices[:, None] == indices[None, :]
    assert not sub[same_sample].any()
    np.testing.assert_array_equal(sub, sub.T)


def test_submatrix_rejects_bad_indices():
    c = ConstraintSet([0], [1], [1.0], 3)
    with pytest.raises(ValueError, match="outside"):
        c.submatrix([0, 3])


def test_large_sparse_set_is_fast():
    n = 1_000_000
    rng = np.random.default_rng(0)
    i = rng.integers(0, n, n)
    j = (i + rng.integers(1, n, n)) % n
    start = time.process_time()
    c = ConstraintSet(i, j, rng.choice([-1.0, 1.0], n), n)
    c.submatrix([0, 1])  # Builds the cached CSR.
    assert time.process_time() - start < 5.0
    assert len(c) > 0.99 * n
    batch = np.concatenate([c.i[:64], c.j[:64], rng.integers(0, n, 128)])
    timings = []
    for _ in range(20):
        start = time.perf_counter()
        sub = c.submatrix(batch)
        timings.append(time.perf_counter() - start)
    assert min(timings) < 5e-3
    np.testing.assert_array_equal(sub[np.arange(64), np.arange(64) + 64], c.weight[:64])
    rows, cols = np.nonzero(sub)
    pairs = set(zip(np.minimum(batch[rows], batch[cols]).tolist(), np.maximum(batch[rows], batch[cols]).tolist()))
    assert pairs <= _pairs(c)


def test_from_labels_large():
    labels = np.random.default_rng(0).integers(0, 10, 1_000_000)
    start = time.process_time()
    c = ConstraintSet.from_labels(labels, 200_000)
    assert time.process_time() - start < 5.0
    assert len(c) == 200_000


# ----------------------------------------------------------- satisfied ---


def test_satisfied():
    c = ConstraintSet([0, 0, 2, 1], [1, 2, 3, 3], [1.0, -1.0, 1.0, -1.0], 4)
    # Stored order: (0, 1) ML, (0, 2) CL, (1, 3) CL, (2, 3) ML.
    np.testing.assert_array_equal(c.satisfied([5, 5, 7, 5]), [True, True, False, False])
    np.testing.assert_array_equal(c.satisfied([0, 1, 2, 2]), [False, True, True, True])
    with pytest.raises(ValueError, match="shape"):
        c.satisfied([0, 1, 2])


# -------------------------------------------------- spread to neighbours ---


def test_nearest_neighbours_leave_the_sample_out_also_among_duplicates():
    from dcgmm_tf.constraints.spread import nearest_neighbours

    rng = np.random.default_rng(0)
    x = rng.random((40, 3)).astype(np.float32)
    x[7] = x[3]  # an exact duplicate: each is the other's nearest neighbour
    samples = np.array([0, 3, 7, 39])
    found = nearest_neighbours(x, samples, 3)
    distances = ((x[samples, None] - x[None]) ** 2).sum(-1)
    distances[np.arange(4), samples] = np.inf
    np.testing.assert_array_equal(np.sort(distances, 1)[:, :3], np.take_along_axis(distances, found, 1))
    assert found[1, 0] == 7 and found[2, 0] == 3 and not (found == samples[:, None]).any()
    with pytest.raises(ValueError, match="k must be in"):
        nearest_neighbours(x, samples, 40)


def test_spread_pairs_follow_the_answers_to_the_neighbours():
    from dcgmm_tf.constraints.spread import spread_pairs

    given = ConstraintSet([0, 2, 4], [1, 3, 5], [10.0, -10.0, 4.0], 12)
    ends = np.arange(6)
    # neighbours of samples 0..5; 3's neighbour is 1 and 4's is 0: the spreads (0, 1) repeat a given pair, (2, 1)
    # comes as a cannot-link from (2, 3) and as nothing else, (5, 0) as a must-link from (4, 5)
    neighbours = np.array([[6], [7], [8], [1], [0], [9]])
    i, j, w = spread_pairs(given.i, given.j, given.weight, ends, neighbours, 0.5)
    spread = {(min(a, b), max(a, b)): v for a, b, v in zip(i[3:], j[3:], w[3:])}
    expected = {}
    for a, b, v in zip(given.i, given.j, given.weight):  # the plain definition
        for u, t in [(n, b) for n in neighbours[a]] + [(a, n) for n in neighbours[b]]:
            pair = (min(u, t), max(u, t))
            if u != t and pair not in set(zip(given.i, given.j)):
                expected.setdefault(pair, []).append(0.5 * v)
    expected = {p: max(v, key=abs) for p, v in expected.items() if len(set(np.sign(v))) == 1}
    assert spread == pytest.approx(expected) and (0, 1) not in spread
    np.testing.assert_array_equal(i[:3], given.i)
    # (3, 1) spread from a must-link and a cannot-link is left out; of two must-links the larger weight is kept
    ends, neighbours = np.arange(3), np.array([[3], [9], [3]])  # samples 0 and 2 have the neighbour 3, 1 has 9
    i, j, w = spread_pairs(np.array([0, 1]), np.array([1, 2]), np.array([3.0, -5.0]), ends, neighbours, 1.0)
    assert sorted(zip(i[2:], j[2:], w[2:])) == [(0, 9, 3.0), (2, 9, -5.0)]
    i, j, w = spread_pairs(np.array([0, 1]), np.array([1, 2]), np.array([3.0, 5.0]), ends, neighbours, 1.0)
    assert sorted(zip(i[2:], j[2:], w[2:])) == [(0, 9, 3.0), (1, 3, 5.0), (2, 9, 5.0)]
    with pytest.raises(ValueError, match="factor"):
        spread_pairs(given.i, given.j, given.weight, ends, neighbours, 0.0)


@pytest.mark.parametrize("link_type", ["both", "must", "cannot"])
def test_a_run_spreads_its_answers_when_asked(link_type):
    from dcgmm_tf import recipe
    from dcgmm_tf.config import RunConfig
    from dcgmm_tf.data import DataSplits

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    x = (0.1 + 0.8 * np.eye(3)[y].repeat(4, 1) + rng.normal(0, 0.05, (300, 12))).clip(0, 1).astype(np.float32)
    data = DataSplits(x, y.astype(np.int64), x[:30], y[:30].astype(np.int64), name="toy", likelihood="bernoulli")
    config = RunConfig(num_constraints=40, q=0.1, link_type=link_type, num_clusters=3, spread_neighbours=0)
    given = recipe.prepare_run(config, data).constraints
    spread_run = recipe.prepare_run(dataclasses.replace(config, spread_neighbours=2, spread_weight=0.25), data)
    spread = spread_run.constraints
    assert len(given) == 40 == len(spread_run.answers) < len(spread) <= 40 * 5
    kept = {(a, b): w for a, b, w in zip(spread.i, spread.j, spread.weight)}
    assert all(kept[(a, b)] == w for a, b, w in zip(given.i, given.j, given.weight))  # every answer as given
    extra = np.array([w for p, w in kept.items() if p not in set(zip(given.i, given.j))])
    assert np.isin(np.abs(extra), 0.25 * np.abs(given.weight)).all()  # at a quarter of an answer's weight
    assert set(np.sign(extra)) == set(np.sign(given.weight))  # must-link-only stays must-link-only, and so on
    assert np.mean((y[spread.i] == y[spread.j]) == (spread.weight > 0)) > 0.85  # the neighbours share the class
    vade = recipe.prepare_run(dataclasses.replace(config, method="vade", spread_neighbours=1), data)
    assert len(vade.constraints) == len(vade.answers) == 0  # VaDE has no answers to spread: it stays the paper's
