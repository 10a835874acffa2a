"""Pictures of a run and of a table: training curves, the test confusion matrix, Table 1 as bars."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

# How tables and figures name each method (the paper's spelling).
METHOD_NAMES = {"dcgmm": "DC-GMM", "vade": "VaDE", "cidec": "C-IDEC", "sdec": "SDEC", "pckmeans": "PCKMeans"}

LOSS_TERMS = ("loss", "reconstruction", "cluster_kl", "constraint")
TEST_METRICS = ("test_acc", "test_nmi", "test_ari")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_history(history: pd.DataFrame, path: Path, title: str) -> None:
    """One panel per loss term (each numeric column but the test metrics) and one with the test ACC/NMI/ARI,
    against the epoch (or iteration)."""
    plt = _pyplot()
    x_name = next((c for c in ("epoch", "iteration") if c in history), None)
    x = history[x_name] + (1 if x_name == "epoch" else 0) if x_name else pd.Series(np.arange(1, len(history) + 1))
    terms = [
        c
        for c in history.select_dtypes("number").columns
        if c not in (x_name, "elapsed_seconds", *TEST_METRICS) and history[c].notna().any()
    ]
    terms.sort(key=lambda c: LOSS_TERMS.index(c) if c in LOSS_TERMS else len(LOSS_TERMS))
    tests = [c for c in TEST_METRICS if c in history and history[c].notna().any()]
    panels = len(terms) + bool(tests)
    fig, axes = plt.subplots(1, max(panels, 1), figsize=(3.3 * max(panels, 1), 3.0), squeeze=False)
    for ax, term in zip(axes[0], terms):
        ax.plot(x, history[term], color="tab:blue")
        ax.set_title(term, fontsize=9)
        ax.set_xlabel(x_name or "step")
        ax.grid(alpha=0.3)
    if tests:
        ax = axes[0][len(terms)]
        for metric in tests:
            rows = history[metric].notna()
            ax.plot(x[rows], history.loc[rows, metric], marker="o", markersize=3, label=metric[5:].upper())
        ax.set_title("test split", fontsize=9)
        ax.set_xlabel(x_name or "step")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_confusion(matrix: np.ndarray, classes: Sequence[str], clusters: Sequence[int], path: Path, title: str) -> None:
    """The test confusion matrix [class, cluster] (clusters ordered by their matched class), counts in the cells."""
    plt = _pyplot()
    size = 1.2 + 0.45 * max(matrix.shape)
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    image = ax.imshow(matrix, cmap="Blues")
    ax.set_xticks(range(matrix.shape[1]), [str(k) for k in clusters], fontsize=7)
    ax.set_yticks(range(matrix.shape[0]), list(classes), fontsize=7)
    ax.set_xlabel("cluster (ordered by matched class)")
    ax.set_ylabel("true class")
    if matrix.size <= 400:
        limit = matrix.max() / 2
        for (r, c), count in np.ndenumerate(matrix):
            ax.text(c, r, str(count), ha="center", va="center", fontsize=6, color="white" if count > limit else "black")
    fig.colorbar(image, ax=ax, fraction=0.046)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_table(table: pd.DataFrame, path: Path, title: str, names: dict[str, str] | None = None) -> None:
    """Table 1 as bars: one panel per data set and metric, measured mean +- std per method next to the paper."""
    plt = _pyplot()
    names = names or {}
    panels = list(table.groupby(["dataset", "metric"], sort=False))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.4), squeeze=False)
    for ax, ((dataset, metric), group) in zip(axes[0], panels):
        methods = [names.get(m, m) for m in group["method"]]
        positions = np.arange(len(group))
        ax.bar(positions - 0.2, group["mean"], 0.4, yerr=group["std"].fillna(0), capsize=3, label="measured")
        paper = pd.to_numeric(group["paper"].astype(str).str.split("±").str[0], errors="coerce")
        ax.bar(positions + 0.2, paper, 0.4, color="tab:gray", alpha=0.6, label="paper")
        ax.set_xticks(positions, methods, rotation=30, ha="right", fontsize=8)
        ax.set_title(f"{dataset}: {metric.upper()} (%)", fontsize=9)
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_curves(curves: pd.DataFrame, path: Path, title: str, metric: str = "acc") -> None:
    """``metric`` against the number of pairs, one line per strategy: the mean over seeds, a band of one standard
    deviation, the seeds' count in the legend."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for strategy, rows in curves.groupby("strategy", sort=True):
        by_pairs = rows.groupby("num_pairs")[metric]
        mean, std = by_pairs.mean(), by_pairs.std().fillna(0.0)
        seeds = rows["seed"].nunique()
        ax.plot(mean.index, mean.values, marker="o", markersize=3, label=f"{strategy} ({seeds} seeds)")
        ax.fill_between(mean.index, mean - std, mean + std, alpha=0.2)
    ax.set_xlabel("pairs answered")
    ax.set_ylabel(f"test {metric.upper()}")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
