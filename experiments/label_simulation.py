r"""A simulated person on the labelling page: headless Chromium answers every question from the training labels
and presses Retrain after each round, until the budget is answered; then the scores of each retrain are compared
with the curve ``experiments.active`` wrote for the same flags.

    python -m experiments.active --dataset=fashion --strategies=anchor --start_pairs=500 --budgets=1000,1500,2000 \
        --output_dir=results/label_simulation
    python -m experiments.label_simulation --dataset=fashion --strategies=anchor --start_pairs=500 \
        --budgets=1000,1500,2000 --label_dir=results/label_simulation/label \
        --compare_with=results/label_simulation/curves.csv --screenshot=docs/images/labelling.png

Every other flag goes to ``experiments.label`` (the server runs in a child process). Writes
``<label_dir>/rounds.csv`` (one row per retrain) and exits 1 when a score differs from the curve's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
from absl import app, flags

from dcgmm_tf.validation import exit_on_user_error
from experiments import label as _label_flags  # noqa: F401 (the flags of the server)
from experiments import run

FLAGS = flags.FLAGS
flags.DEFINE_string("compare_with", None, "curves.csv of experiments.active with the same flags (unset: no check).")
flags.DEFINE_string("screenshot", None, "PNG of the page before the last round is answered (unset: none).")
flags.DEFINE_float("retrain_timeout", 7200, "Seconds one retrain may take.", lower_bound=1)

SCORES = ("num_pairs", "acc", "nmi", "ari")
OWN_FLAGS = ("compare_with", "screenshot", "retrain_timeout")


def compare(rounds: pd.DataFrame, curves: pd.DataFrame, strategy: str, seed: int) -> pd.DataFrame:
    """The retrains' scores beside those of the curve of ``strategy`` and ``seed`` (rows by number of pairs), with
    a column ``same``: whether every score is equal to the last digit."""
    curve = curves[(curves["strategy"] == strategy) & (curves["seed"] == seed)]
    curve = curve.drop_duplicates("num_pairs", keep="last")[list(SCORES)]
    table = rounds[list(SCORES)].merge(curve, on="num_pairs", how="left", suffixes=("", "_active"))
    table["same"] = [all(row[s] == row[f"{s}_active"] for s in SCORES[1:]) for _, row in table.iterrows()]
    return table


def main(argv):
    del argv
    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.recipe import prepare_run
    from experiments.label_browser import LabellingPage, LabelServer, chromium

    if not FLAGS.label_dir:
        raise ValueError("--label_dir is required: the folder where the answers are kept")
    config, runtime = run.configs(FLAGS)
    labels = prepare_run(config, load_dataset(config.dataset, runtime.data_dir)).inputs.y_train
    folder = Path(FLAGS.label_dir)
    folder.mkdir(parents=True, exist_ok=True)
    server_flags = [a for a in sys.argv[1:] if not any(a.startswith(f"--{name}") for name in OWN_FLAGS)]
    server = LabelServer(server_flags, folder / "server.log").start()
    browser = chromium()
    retrains = len(FLAGS.budgets) + 1
    try:
        page = LabellingPage(browser, labels)
        page.open(server.url)
        done = json.loads((folder / "state.json").read_text())["retrains"] if (folder / "state.json").exists() else 0
        for retrain in range(done, retrains):
            if FLAGS.screenshot and retrain == retrains - 1:  # the page with a question, scores and clusters
                Path(FLAGS.screenshot).parent.mkdir(parents=True, exist_ok=True)
                browser.save_screenshot(FLAGS.screenshot)
            answered = page.answer(10**9)
            print(f"retrain {retrain}: {answered} answers from the browser, training", file=sys.stderr, flush=True)
            page.retrain(FLAGS.retrain_timeout)
    finally:
        browser.quit()
        server.kill()
    rounds = pd.DataFrame(json.loads((folder / "state.json").read_text())["rounds"])
    rounds.to_csv(folder / "rounds.csv", index=False)
    print(rounds.to_string(index=False), file=sys.stdout)
    if FLAGS.compare_with:
        table = compare(rounds, pd.read_csv(FLAGS.compare_with), FLAGS.strategies[0], config.seed)
        print(table.to_string(index=False), file=sys.stdout)
        if not table["same"].all():
            sys.exit(1)


if __name__ == "__main__":
    app.run(exit_on_user_error(main))
