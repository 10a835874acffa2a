"""studies.your_data_bench in its tiny mode: one row per fit, a summary, and a second call that fits nothing.

The runner's core (``run_bench``) runs in the test's process; importing the module defines no flags.
"""

import numpy as np
import pandas as pd
import pytest

from studies import your_data_bench as bench


def test_tiny_bench_writes_a_row_per_fit_and_resumes(tmp_path):
    summary = bench.run_bench(tmp_path, [0, 1], [30], tiny=True)
    rows = pd.read_csv(tmp_path / "results.csv")
    assert list(rows.columns) == list(bench.COLUMNS)
    planned = {(name, count, method) for name in bench.TINY_SETS for count, method in bench._planned([30], False)}
    derived = {(name, 30, method) for name in bench.TINY_SETS for method in bench.DERIVED}  # from dcgmm's fit
    expected = planned | derived
    assert set(zip(rows.dataset, rows.num_pairs, rows.method)) == expected
    assert len(rows) == len(expected) == 7 * len(bench.TINY_SETS)  # kmeans, gmm (0 pairs); 5 with 30 pairs
    assert (rows.seed == 0).all()  # the tiny mode runs the first seed only
    assert rows.ari.between(-1, 1).all()  # no fit failed (a failed fit's ARI is NaN)
    assert (rows.half == rows.dataset.map(bench.HALVES)).all()
    dcgmm = rows[rows.method == "dcgmm"]
    assert dcgmm.note.str.contains("epochs 2\\+2 pretraining").all()  # the tiny schedule, not the defaults
    assert (dcgmm.clusters_used <= dcgmm.n_classes).all()
    assert (tmp_path / "summary.csv").is_file() and len(summary) == len(expected)
    assert "| iris | tuning | 30 |" in bench.markdown_table(summary)
    one = rows[rows.method == bench.ONE_START].set_index("dataset").ari
    kept = dcgmm.set_index("dataset")
    deep = rows[rows.method == bench.DEEP].set_index("dataset").ari
    # The deep model's clusters are the first start's where that start was kept, and the fit's where it was chosen.
    first = kept.note.str.contains("kept the embedding start")
    assert (one[first.index[first]] == deep[first.index[first]]).all()
    chosen = kept.note.str.contains("labels from the deep model")
    assert (deep[chosen.index[chosen]] == kept.ari[chosen]).all()
    mixture = rows[rows.method == bench.INPUT].set_index("dataset").ari
    assert (mixture[chosen.index[~chosen]] == kept.ari[~chosen]).all()  # the others' labels are the mixture's

    bench.run_bench(tmp_path, [0], [30], tiny=True)  # every row is there: nothing is fitted again
    assert len(pd.read_csv(tmp_path / "results.csv")) == len(rows)


def test_params_replace_the_estimators_defaults_in_every_fit(tmp_path):
    bench.run_bench(tmp_path, [0], [0], tiny=True, datasets=["iris"], params={"hidden_units": [16], "epochs": 1})
    rows = pd.read_csv(tmp_path / "results.csv")
    note = rows[rows.method == "dcgmm"].note.item()
    assert "units 16," in note and "epochs 1+2 pretraining" in note  # the tiny mode's other settings stay
    assert bench._is_json_object('{"hidden_units": [64, 64]}') and not bench._is_json_object("[64, 64]")
    with pytest.raises(ValueError, match="random_state"):
        bench.run_bench(tmp_path, [0], [0], tiny=True, params={"random_state": 3})


def test_subspace_blobs_vary_in_a_few_directions_of_their_own():
    x, y = bench.subspace_blobs(20, 7, rank=3)
    again = bench.subspace_blobs(20, 7, rank=3)
    np.testing.assert_array_equal(x, again[0])
    assert x.shape == (len(y), 20) and np.bincount(y).min() >= 15
    for label in np.unique(y):
        spectrum = np.sort(np.linalg.eigvalsh(np.cov(x[y == label].T)))[::-1]
        assert spectrum[2] > 4 * spectrum[3]  # three directions of its own, then the noise


def test_half_means_average_each_halfs_sets_per_pair_count():
    rows = []
    for name, half, base in (("a", "tuning", 0.2), ("b", "tuning", 0.4), ("c", "reporting", 0.9)):
        for seed in (0, 1):
            for count, method, ari in (
                (0, "dcgmm", base),
                (0, "kmeans", base - 0.1),
                (0, "gmm", base + 0.1),
                (50, "dcgmm", base + 0.2 + 0.1 * seed),  # seeds 0-1: mean base + 0.25
                (50, "pckmeans", base),
            ):
                rows.append(
                    {"dataset": name, "half": half, "n_classes": 2, "seed": seed, "num_pairs": count, "method": method}
                    | {"ari": ari, "clusters_used": 2, "seconds": 1.0, "warnings": 0}
                )
    table = bench.half_means_table(bench.summarise(pd.DataFrame(rows))).splitlines()
    assert table[2:] == [
        "| reporting | 0 | 1 | 0.900 | – | – | 0.800 | 1.000 | – |",
        "| reporting | 50 | 1 | 1.150 | – | – | 0.800 | 1.000 | 0.900 |",
        "| tuning | 0 | 2 | 0.300 | – | – | 0.200 | 0.400 | – |",
        "| tuning | 50 | 2 | 0.550 | – | – | 0.200 | 0.400 | 0.300 |",
    ]


@pytest.mark.parametrize(
    ("name", "counts"),
    [
        ("docstrings", [300, 300, 300, 300]),
        ("docstrings_tf", [300, 300, 300]),
        ("docstrings_libs", [139, 300, 151, 252]),
    ],
)
def test_a_text_set_is_read_from_its_fixed_file(name, counts):
    """Each text once, the labels' counts as the set was built; the features are those of these documents."""
    documents, labels, names = bench.text_corpus(name)
    assert np.bincount(labels).tolist() == counts and len(names) == len(counts)
    assert len(set(documents)) == len(documents)
    x, y = bench.SETS[name]()
    assert x.shape == (len(documents), 100) and x.dtype == np.float64 and np.isfinite(x).all()
    np.testing.assert_array_equal(y, labels)
