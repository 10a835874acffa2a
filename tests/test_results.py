"""results.csv survives concurrent writers and writers killed at any moment."""

import csv
import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from dcgmm_tf.config import settings_hash
from experiments import results

REPO = Path(__file__).resolve().parents[1]
# A writer process: appends rows (writer, k, payload, payload length) to argv[1] until it has written argv[3].
WRITER = """
import sys
from experiments import results
path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
payload = name * 3000  # long rows: many pages per write
for k in range(count):
    results.append_row(path, {"writer": name, "k": k, "payload": payload, "length": len(payload)})
    print(k, flush=True)
"""


def start_writer(path, name, count):
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), name, str(count)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def complete(row):
    return None not in row.values() and len(row["payload"]) == int(row["length"] or -1)


def check_rows(path, kills=0):
    """Every line of the CSV is a complete row, but for at most one line per writer killed: SIGKILL can cut a write
    of several pages short (Linux ends a write to a file early on a fatal signal), and the next row starts on a new
    line. The library's reader leaves those lines out. Returns the complete rows."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    whole = [row for row in rows if complete(row)]
    assert len(rows) - len(whole) <= kills, "partial rows"
    for row in whole:
        assert set(row["payload"]) == {row["writer"]}, "interleaved rows"
    assert [r[:2] for r in results.valid_rows(path)[1]] == [[r["writer"], r["k"]] for r in whole]
    return whole


def test_concurrent_writers_lose_no_rows(tmp_path):
    path = tmp_path / "results.csv"
    writers = [start_writer(path, name, 40) for name in "abcd"]
    for writer in writers:
        assert writer.wait(timeout=120) == 0, writer.stderr.read()
    rows = check_rows(path)
    assert len(rows) == 160
    for name in "abcd":
        assert [int(r["k"]) for r in rows if r["writer"] == name] == list(range(40))
    assert path.read_text().count("writer,k,payload,length") == 1


def test_killed_writers_leave_only_complete_rows(tmp_path):
    path = tmp_path / "results.csv"
    written = 0
    for attempt, name in enumerate("xyz"):
        writer = start_writer(path, name, 10**6)
        for _ in range(20 + 15 * attempt):  # kill it at a different point each time
            writer.stdout.readline()
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        rows = check_rows(path, kills=attempt + 1)
        assert len(rows) >= written + 20
        written = len(rows)
    results.append_row(path, {"writer": "w", "k": 0, "payload": "w", "length": 1})
    assert len(check_rows(path, kills=3)) == written + 1  # on a line of its own, after a cut one


def test_lock_of_a_killed_process_is_released(tmp_path):
    path = tmp_path / "results.csv"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('locked', flush=True)\ntime.sleep(600)",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "locked"
    fd = os.open(path, os.O_RDWR)
    with pytest.raises(BlockingIOError):  # the lock is really held
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(fd)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    start = time.monotonic()
    results.append_row(path, {"a": 1})
    assert time.monotonic() - start < 5
    assert path.read_text() == "a\n1\n"


def test_partial_last_line_does_not_swallow_the_next_row(tmp_path):
    path = tmp_path / "results.csv"
    results.append_row(path, {"a": 1, "b": 2})
    with open(path, "a") as f:
        f.write("3,")  # some other program died mid-line
    results.append_row(path, {"b": 6, "a": 5})
    assert path.read_text() == "a,b\n1,2\n3,\n5,6\n"


def test_rows_follow_the_existing_header(tmp_path, caplog):
    path = tmp_path / "r.csv"
    results.append_row(path, {"a": 1, "b": 2})
    results.append_row(path, {"b": 4, "c": 5, "a": 3})  # e.g. a file written before a column was added
    assert "has no column(s) ['c']" in caplog.text
    results.append_row(path, {"a": 6})
    assert path.read_text() == "a,b\n1,2\n3,4\n6,\n"


def test_has_row_and_settings_hash(tmp_path):
    path = tmp_path / "r.csv"
    assert not results.has_row(path, {"seed": 0})
    results.append_row(path, {"method": "dcgmm", "seed": 3, "q": 0.1, "config": "abc"})
    assert results.has_row(path, {"method": "dcgmm", "seed": 3, "config": "abc"})
    assert results.has_row(path, {"q": 0.1})
    assert not results.has_row(path, {"method": "dcgmm", "seed": 4, "config": "abc"})
    assert not results.has_row(path, {"method": "vade", "seed": 3})
    key = settings_hash({"b": 1, "a": [1, 2]})
    assert key == settings_hash({"a": [1, 2], "b": 1}) and len(key) == 12
    assert key != settings_hash({"b": 2, "a": [1, 2]})


def test_write_csv_atomically(tmp_path):
    frame = pd.DataFrame({"a": [1, 2]})
    results.write_csv_atomically(frame, tmp_path / "s.csv")
    assert (tmp_path / "s.csv").read_text() == "a\n1\n2\n"
    assert [p.name for p in tmp_path.iterdir()] == ["s.csv"]


def test_summarise_groups_by_config():
    rows = pd.DataFrame(
        {
            "dataset": ["d"] * 3,
            "method": ["m"] * 3,
            "num_constraints": [5] * 3,
            "q": [0.0] * 3,
            "alpha": [1.0] * 3,
            "epochs": [2] * 3,
            "config": ["x", "x", "y"],
            "acc": [0.5, 0.7, 0.9],
        }
    )
    summary = results.summarise(rows)
    assert summary["runs"].tolist() == [2, 1]
    assert summary["acc_mean"].tolist() == pytest.approx([0.6, 0.9])
    assert results.summarise(rows.drop(columns="config"))["runs"].tolist() == [3]


def test_files_with_the_old_column_names_are_read_and_appended_to(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("method,seed,num_constraints,pretrain_acc,acc\ndcgmm,0,10,0.25,0.5\n")
    results.append_row(path, {"method": "dcgmm", "seed": 1, "num_constraints": 20, "start_acc": 0.75, "acc": 0.5})
    assert path.read_text().splitlines()[-1] == "dcgmm,1,20,0.75,0.5"  # under the file's old names
    rows = results.read_rows(path)
    assert rows["num_constraints"].tolist() == [10, 20] and rows["start_acc"].tolist() == [0.25, 0.75]


def test_config_keys_that_look_like_numbers_stay_text(tmp_path):
    path = tmp_path / "r.csv"
    results.append_row(path, {"method": "dcgmm", "seed": 0, "acc": 0.5, "config": "012345678901"})
    rows = results.read_rows(path)
    assert rows["config"].tolist() == ["012345678901"]
    assert results.summarise(rows)["config"].tolist() == ["012345678901"]


def test_the_last_summary_of_runs_sharing_a_folder_counts_every_row(tmp_path):
    """Run a reads the rows and is slow to summarise them; run b appends its row meanwhile and summarises. Without
    the lock, b's summary (two runs) would be overwritten by a's (one run)."""
    path, summary_path = tmp_path / "results.csv", tmp_path / "summary.csv"
    a_read, b_appended = threading.Event(), threading.Event()
    row = {"dataset": "toy", "method": "dcgmm", "num_constraints": 10, "config": "k", "acc": 0.5}

    def slow_summary(rows):
        a_read.set()
        b_appended.wait(10)
        time.sleep(0.5)  # b would summarise now, were it not kept waiting
        return results.summarise(rows)

    def run_a():
        results.append_row(path, {**row, "seed": 0})
        results.write_summary(path, summary_path, slow_summary)

    def run_b():
        a_read.wait(10)
        results.append_row(path, {**row, "seed": 1, "acc": 0.75})
        b_appended.set()
        results.write_summary(path, summary_path, results.summarise)

    threads = [threading.Thread(target=run) for run in (run_a, run_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert a_read.is_set() and b_appended.is_set()
    summary = pd.read_csv(summary_path)
    assert summary["runs"].tolist() == [2] and summary["acc_mean"].tolist() == [0.625]


@pytest.mark.slow
def test_two_runs_at_once_on_one_folder_both_land_in_results_and_summary(tmp_path):
    """Two runs of experiments.run with different seeds and one more with the first seed, all at once on one
    --output_dir: two rows, a summary of two runs; the repeated run waits for the first and skips."""
    from tests.helpers import toy_npz

    dataset = toy_npz(tmp_path, 200)

    def start(seed):
        command = [
            sys.executable,
            "-m",
            "experiments.run",
            f"--dataset={dataset}",
            "--pretrain_epochs=1",
            "--pair_tuning_epochs=0",
            "--epochs=2",
            "--num_constraints=100",
            "--latent_dim=2",
            "--batch_size=64",
            "--threads=1",
            "--verbose=0",
            f"--seed={seed}",
            f"--output_dir={tmp_path / 'out'}",
            f"--cache_dir={tmp_path / 'cache'}",
        ]
        return subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    runs = [start(seed) for seed in (0, 1, 0)]
    for run in runs:
        _, err = run.communicate(timeout=600)
        assert run.returncode == 0, err[-3000:]
    rows = results.read_rows(tmp_path / "out" / "results.csv")
    assert sorted(rows["seed"].tolist()) == [0, 1]
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert summary["runs"].tolist() == [2]
    assert summary["acc_mean"].item() == pytest.approx(rows["acc"].mean())
