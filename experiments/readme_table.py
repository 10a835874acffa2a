r"""The README's results table, made from the ``summary.csv`` files under ``docs/results`` and the paper's Table 1.

    python -m experiments.readme_table            # print the table
    python -m experiments.readme_table --write    # put it into README.md between its markers

Each row names the folder whose ``summary.csv`` holds its numbers and the summary row it takes, so a number in the
README cannot drift from its rows: ``tests/test_readme.py`` checks that the README holds this table.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pandas as pd
from absl import app, flags

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "docs" / "results"
PAPER_TABLE = Path(__file__).resolve().parent / "paper_table1.csv"
README = REPO / "README.md"
BEGIN, END = "<!-- results table: made by python -m experiments.readme_table -->", "<!-- end of results table -->"
METRICS = ("acc", "nmi", "ari")


@dataclasses.dataclass(frozen=True)
class Row:
    """One line of the table.

    Attributes:
      data: The data set as the table names it, MNIST or Fashion; in lower case, its name in ``paper_table1.csv``.
      method: What ran, as the reader sees it.
      flags: The flags added to the common command (``--num_constraints=6000`` and the data set), or "" for the
        paper's own row.
      folder: The folder under ``docs/results`` whose ``summary.csv`` holds the numbers; "" for the paper's row.
      where: Column values that pick the summary row (e.g. ``{"seeds": "0-9"}``).
      held_out: Column values of a second summary row whose mean ACC is shown beside (seeds never used to choose).
      paper_column: The paper's Table 1 column, for the paper's row.
    """

    data: str
    method: str
    flags: str
    folder: str = ""
    where: tuple[tuple[str, str], ...] = ()
    held_out: tuple[tuple[str, str], ...] = ()
    paper_column: str = ""


ROWS = (
    Row("MNIST", "DC-GMM, the paper's Table 1", "", paper_column="DC-GMM"),
    Row("MNIST", "DC-GMM, default", "`--runs=10`", "mnist/default", (("seeds", "0-9"),), (("seeds", "5-9"),)),
    Row("Fashion", "DC-GMM, the paper's Table 1", "", paper_column="DC-GMM"),
    Row("Fashion", "DC-GMM, default", "`--runs=10`", "fashion/default", (("seeds", "0-9"),), (("seeds", "5-9"),)),
    Row("Fashion", "DC-GMM, paper's protocol", "`--protocol=paper --epochs=50`", "fashion/paper"),
    Row("Fashion", "variant, pixels", "`--pair_loss=likelihood`", "fashion/variant_pixels", (("threads", "2"),)),
    Row(
        "Fashion",
        "variant, scaled HOG",
        "`--protocol=variant`",
        "fashion/variant",
        (("seeds", "0-9"),),
        (("seeds", "5-9"),),
    ),
    Row("Fashion", "VaDE", "`--method=vade --protocol=paper --epochs=50`", "fashion/vade"),
)


def _picked(summary: pd.DataFrame, where: tuple[tuple[str, str], ...], folder: str) -> pd.Series:
    """The one summary row with the given column values; an error names the folder when there is not exactly one."""
    chosen = summary
    for column, value in where:
        chosen = chosen[chosen[column].astype(str) == value]
    if len(chosen) != 1:
        raise ValueError(f"docs/results/{folder}/summary.csv: {len(chosen)} rows match {dict(where)}, not one.")
    return chosen.iloc[0]


def _cells(row: Row, results: Path, paper: pd.DataFrame) -> list[str]:
    """The numeric cells of one row: runs, ACC, NMI, ARI (mean ± std in percent), held-out ACC."""
    if row.paper_column:
        values = paper[(paper["dataset"] == row.data.lower())].set_index("metric")[row.paper_column]
        return ["10", *(values[m] for m in METRICS), ""]
    summary = pd.read_csv(results / row.folder / "summary.csv")
    picked = _picked(summary, row.where, row.folder)
    cells = [str(int(picked["runs"]))]
    for m in METRICS:
        std = picked[f"{m}_std"]
        cells.append(f"{100 * picked[f'{m}_mean']:.1f}" + ("" if pd.isna(std) else f"±{100 * std:.1f}"))
    held_out = f"{100 * _picked(summary, row.held_out, row.folder)['acc_mean']:.1f}" if row.held_out else ""
    return [*cells, held_out]


def _label(row: Row) -> str:
    """The reference link's label of a row's folder: its last part (``variant``), or the whole folder
    (``mnist_default``) where rows of several data sets share that part."""
    name = Path(row.folder).name
    shared = sum(Path(other.folder).name == name for other in ROWS if other.folder) > 1
    return row.folder.replace("/", "_") if shared else name


def table(results: Path = RESULTS, paper_table: Path = PAPER_TABLE) -> str:
    """The Markdown table of ``ROWS``, each row linked to its folder (reference links, to keep the lines short)."""
    paper = pd.read_csv(paper_table)
    lines = [
        "| data | method | flags | runs | ACC | NMI | ARI | ACC, seeds from 5 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in ROWS:
        method = f"[{row.method}][{_label(row)}]" if row.folder else row.method
        lines.append("| " + " | ".join([row.data, method, row.flags, *_cells(row, results, paper)]) + " |")
    lines.append("")
    lines.extend(f"[{_label(row)}]: docs/results/{row.folder}/" for row in ROWS if row.folder)
    return "\n".join(lines)


def with_table(readme: str, new_table: str) -> str:
    """``readme`` with the text between the markers replaced by ``new_table``."""
    if readme.count(BEGIN) != 1 or readme.count(END) != 1:
        raise ValueError(f"README.md must hold each marker once: {BEGIN!r} and {END!r}.")
    head, rest = readme.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{new_table}\n{END}{tail}"


flags.DEFINE_boolean("write", False, "Write the table into README.md instead of printing it.")


def main(argv):
    del argv
    new_table = table()
    if flags.FLAGS.write:
        README.write_text(with_table(README.read_text(), new_table))
    else:
        print(new_table, file=sys.stdout)


if __name__ == "__main__":
    app.run(main)
