"""scripts/migrate_results.py: results rows of version 1 keys get the key of this version, their other cells kept."""

import subprocess
import sys
from pathlib import Path

from dcgmm_tf.config import RunConfig
from tests.helpers import OLDER_RECIPE

REPO = Path(__file__).resolve().parent.parent
HEADER = "dataset,method,seed,num_pairs,q,alpha,epochs,acc,config\n"
# Version 1 keys of real rows (docs/results): the default recipe and the older one on Fashion-MNIST, and a key of an
# earlier library that no config of this one gives.
ROWS = (
    "fashion_mnist,dcgmm,0,6000,0.0,10000.0,10,0.8143,5e3a3ee7f6c4\n"
    "fashion_mnist,dcgmm,1,6000,0.0,10000.0,100,0.80125,d4205854d9e9\n"
    "fashion_mnist,dcgmm,0,6000,0.0,10000.0,50,0.682,f59056e52c66\n"
)


def _migrate(*args):
    command = [sys.executable, str(REPO / "scripts" / "migrate_results.py"), *map(str, args)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_old_keys_are_found_and_versioned_and_a_second_run_changes_nothing(tmp_path):
    folder = tmp_path / "results" / "fashion"
    folder.mkdir(parents=True)
    (folder / "results.csv").write_text(HEADER + ROWS)
    (folder / "summary.csv").write_text("dataset,config,acc_mean\nfashion_mnist,5e3a3ee7f6c4,0.81\n")
    (folder / "notes.csv").write_text("a,b\n1,2\n")  # no config column: left alone
    assert "would change" in _migrate(tmp_path / "results", "--dry_run")
    assert (folder / "results.csv").read_text() == HEADER + ROWS

    out = _migrate(tmp_path / "results")
    default = RunConfig(pretrain_epochs=15, mixed_precision="off", fused_adam=False).key()  # the default then
    older = RunConfig(**OLDER_RECIPE).key()
    assert f"5e3a3ee7f6c4 -> {default}" in out and f"d4205854d9e9 -> {older}" in out
    assert "f59056e52c66 -> v1-f59056e52c66  (no config of this version gives it)" in out
    expected = ROWS.replace("5e3a3ee7f6c4", default).replace("d4205854d9e9", older).replace("f590", "v1-f590")
    assert (folder / "results.csv").read_text() == HEADER + expected
    assert (folder / "summary.csv").read_text() == f"dataset,config,acc_mean\nfashion_mnist,{default},0.81\n"
    assert (folder / "notes.csv").read_text() == "a,b\n1,2\n"

    assert "0 of 3 row(s) changed" in _migrate(folder / "results.csv")
    assert (folder / "results.csv").read_text() == HEADER + expected
