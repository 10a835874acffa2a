"""The README and the docs: the results table is the one its rows give, and every kept result is cited."""

import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from experiments import readme_table

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"


def test_the_readme_holds_the_table_its_summaries_give():
    text = README.read_text()
    assert readme_table.with_table(text, readme_table.table()) == text, (
        "README.md's results table differs from its summary.csv files: python -m experiments.readme_table --write"
    )


def test_the_readme_is_short_with_short_lines():
    lines = README.read_text().splitlines()
    assert len(lines) <= 150
    assert max(len(line) for line in lines) <= 120


def test_a_missing_summary_row_is_an_error_naming_the_folder(tmp_path):
    (tmp_path / "fashion" / "default").mkdir(parents=True)
    (tmp_path / "fashion" / "default" / "summary.csv").write_text("seeds,runs,acc_mean\n0-4,5,0.8\n")
    with pytest.raises(ValueError, match=r"fashion/default/summary.csv: 0 rows match \{'seeds': '0-9'\}"):
        readme_table._picked(
            pd.read_csv(tmp_path / "fashion" / "default" / "summary.csv"), (("seeds", "0-9"),), "fashion/default"
        )
    with pytest.raises(ValueError, match="must hold each marker once"):
        readme_table.with_table("no markers here", "| table |")


def test_every_folder_of_results_is_cited_by_a_page():
    pages = [README, *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "docs" / "results").rglob("*.md"))]
    pages += sorted((REPO / "studies").rglob("*.md"))
    text = "\n".join(page.read_text() for page in pages)
    text += "\n".join(f"docs/results/{row.folder}/" for row in readme_table.ROWS if row.folder)
    tracked = subprocess.run(
        ["git", "ls-files", "docs/results", "studies/results"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    folders = {str(Path(path).parent) for path in tracked}
    uncited = sorted(f for f in folders if f"{f}/" not in text)
    assert not uncited, f"folders under docs/results or studies/results that no page cites: {uncited}"


def test_the_pages_and_code_speak_of_the_project_not_of_its_history():
    pattern = re.compile(r"issue [0-9]+|session [0-9]|VM\b", re.IGNORECASE)
    paths = [
        README,
        *(REPO / "docs").rglob("*.md"),
        *(REPO / "dcgmm_tf").rglob("*.py"),
        *(REPO / "experiments").rglob("*.py"),
        *(REPO / "studies").rglob("*.py"),
        *(REPO / "studies").rglob("*.md"),
    ]
    found = [f"{p.relative_to(REPO)}: {m.group(0)}" for p in paths for m in pattern.finditer(p.read_text())]
    assert not found, found
