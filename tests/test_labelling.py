"""The labelling page: answers on disk, the session's rounds against the simulated loop, the web handlers, and one
run in a real browser (headless Chromium)."""

import dataclasses
import time

import numpy as np
import pandas as pd
import pytest
from starlette.testclient import TestClient

from dcgmm_tf import ConstraintSet
from dcgmm_tf.active_loop import ActiveSchedule, simulate
from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.constraints import random_pairs
from dcgmm_tf.data import load_dataset
from dcgmm_tf.labelling import AnswerBook, AnswerError, LabellingSession
from dcgmm_tf.labelling.app import create_app
from dcgmm_tf.recipe import prepare_run
from tests.helpers import toy_loop_configs

SCHEDULE = ActiveSchedule(start_pairs=20, budgets=(40, 70), start_epochs=1, round_epochs=1)


@pytest.fixture(name="toy")
def fixture_toy(tmp_path):
    config, runtime = toy_loop_configs(tmp_path)
    return config, runtime, load_dataset(config.dataset)


def test_random_pairs_are_the_pairs_from_labels_draws():
    labels = np.random.default_rng(1).integers(0, 10, 3000)
    drawn = ConstraintSet.from_labels(labels, 500, seed=3)
    pairs = random_pairs(3000, 500, seed=3)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    assert np.array_equal(pairs[order, 0], drawn.i) and np.array_equal(pairs[order, 1], drawn.j)
    assert (pairs[:, 0] < pairs[:, 1]).all()
    with pytest.raises(ValueError, match="Cannot draw 4 distinct pairs"):
        random_pairs(3, 4, seed=0)


def test_answer_book_asks_in_order_refuses_a_second_answer_and_reads_back(tmp_path):
    book = AnswerBook(tmp_path, 10)
    book.ask(np.array([[0, 1], [2, 3], [4, 5], [6, 7]]), 0)
    book.record(0, 1, "same")
    with pytest.raises(AnswerError, match="answered already"):
        book.record(1, 0, "different")  # a second tab, the pair either way round
    with pytest.raises(AnswerError, match="not the question asked now"):
        book.record(4, 5, "same")
    with pytest.raises(ValueError, match="answer must be one of"):
        book.record(2, 3, "maybe")
    book.record(2, 3, "skip")
    book.record(4, 5, "different")
    assert book.undo() == (4, 5) and book.next_question() == 2
    book.record(4, 5, "different")
    book.ask(np.array([[6, 7], [8, 9]]), 1)  # (6, 7) is asked already
    assert book.pairs.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]] and book.rounds.tolist() == [0, 0, 0, 0, 1]
    on_disk = ConstraintSet.from_csv(tmp_path / "answers.csv", 10)  # the file --constraints_file reads
    assert on_disk.i.tolist() == [0, 4] and on_disk.weight.tolist() == [1.0, -1.0]
    again = AnswerBook(tmp_path, 10)
    assert again.votes == book.votes and again.next_question() == 3 and again.num_skipped == 1
    assert again.undo() == (4, 5) and again.undo() == (2, 3) and again.undo() == (0, 1) and again.undo() is None
    (tmp_path / "questions.csv").write_text("i,j\n0,1\n")
    with pytest.raises(ValueError, match="questions.csv is damaged"):
        AnswerBook(tmp_path, 10)


def answer_from_labels(session, labels, count=None):
    answered = 0
    while (pair := session.snapshot()["pair"]) is not None and (count is None or answered < count):
        session.answer(*pair, "same" if labels[pair[0]] == labels[pair[1]] else "different")
        answered += 1
    return answered


@pytest.mark.slow
def test_session_answered_from_labels_is_the_simulated_loop_and_resumes(toy, tmp_path):
    config, runtime, data = toy
    # Answers spread to neighbours: the session and the loop both spread them, through the same code as without
    # (`recipe.training_pairs`), so one test covers both; the browser test below runs without spreading.
    config = dataclasses.replace(config, spread_neighbours=1)
    other_cache = RuntimeConfig(verbose=0, output_dir=str(tmp_path / "out"), cache_dir=str(tmp_path / "cache2"))
    simulated = simulate(config, data, ["anchor"], SCHEDULE, other_cache)
    session = LabellingSession(config, data, tmp_path / "label", SCHEDULE, "anchor", runtime)
    labels = session.run.inputs.y_train
    for retrain in range(3):
        assert answer_from_labels(session, labels) == [20, 20, 30][retrain]
        session.retrain(wait=True)
        if retrain == 1:  # a server started again: the weights and the questions come from the folder
            session = LabellingSession(config, data, tmp_path / "label", SCHEDULE, "anchor", runtime)
    rounds = pd.DataFrame(session.snapshot()["rounds"])
    expected = pd.DataFrame(simulated)
    for column in ("num_pairs", "epochs", "acc", "nmi", "ari"):
        assert rounds[column].tolist() == expected[column].tolist(), column
    clusters = session.snapshot()["clusters"]
    assert len(clusters) == 2 and all(0 < len(members) <= 8 for members in clusters)
    assert session.snapshot()["pair"] is None and session.snapshot()["answered"] == session.budget == 70
    assert len(list((tmp_path / "label").glob("model-*.weights.h5"))) == 1  # only the last weights are kept


def test_a_session_refuses_what_a_person_cannot_answer(tmp_path):
    config, runtime = toy_loop_configs(tmp_path)
    digits = load_dataset("digits")
    for changes, message in (
        ({"method": "vade"}, "needs method dcgmm"),
        ({"input_features": "hog"}, "needs input_features pixels"),
        ({"input_features": "hog_scaled"}, "needs input_features pixels"),
    ):
        bad = dataclasses.replace(config, dataset="digits", **changes)
        with pytest.raises(ValueError, match=message):
            LabellingSession(bad, digits, tmp_path / "label", SCHEDULE, "anchor", runtime)
    with pytest.raises(ValueError, match="strategy must be one of"):
        LabellingSession(config, digits, tmp_path / "label", SCHEDULE, "closest", runtime)
    assert not (tmp_path / "label").exists()  # refused before anything is written


def wait_idle(client, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = client.get("/api/state").json()
        if state["training"]["phase"] in ("idle", "failed"):
            return state
        time.sleep(0.1)
    raise TimeoutError("the retrain did not end")


def test_handlers_answer_undo_retrain_and_refuse_bad_requests(toy, tmp_path):
    config, runtime, data = toy
    session = LabellingSession(config, data, tmp_path / "label", SCHEDULE, "random", runtime, typical=3)
    client = TestClient(create_app(session), raise_server_exceptions=False)
    page = client.get("/")
    assert page.status_code == 200 and 'id="retrain"' in page.text
    state = client.get("/api/state").json()
    assert state["answered"] == 0 and state["budget"] == 70 and state["images"] is False
    i, j = state["pair"]
    features = client.get(f"/api/sample/{i}").json()
    assert len(features) == 12 and {"name", "value", "z"} <= set(features[0])
    assert client.post("/api/retrain").status_code == 409  # nothing answered yet
    assert client.post("/api/answer", json={"i": i, "j": j, "answer": "same"}).json()["answered"] == 1
    second_tab = client.post("/api/answer", json={"i": i, "j": j, "answer": "different"})
    assert second_tab.status_code == 409 and "answered already" in second_tab.json()["error"]
    assert pd.read_csv(tmp_path / "label" / "answers.csv").shape == (1, 3)  # recorded once
    bad = [
        client.post("/api/answer", content=b"{not json"),
        client.post("/api/answer", json=[1, 2]),
        client.post("/api/answer", json={"i": "a", "j": 1, "answer": "same"}),
        client.post("/api/answer", json={"i": 0, "j": 10**6, "answer": "same"}),
        client.post("/api/answer", json={**dict(zip("ij", client.get("/api/state").json()["pair"])), "answer": "?"}),
        client.get("/api/sample/400"),
        client.get("/nowhere"),
    ]
    assert [r.status_code for r in bad] == [400, 400, 400, 400, 400, 404, 404]
    assert all(r.json()["error"] and "Traceback" not in r.text for r in bad)
    assert client.post("/api/undo").json()["answered"] == 0
    assert client.post("/api/undo").status_code == 409
    answer_from_labels(session, session.run.inputs.y_train, count=20)
    assert client.post("/api/retrain").status_code == 202
    assert client.post("/api/retrain").status_code in (202, 409)  # one training at a time
    state = wait_idle(client)
    assert state["training"]["phase"] == "idle" and state["retrains"] == 1 and len(state["clusters"]) == 2
    assert state["rounds"][0]["num_pairs"] == 20 and 0 <= state["rounds"][0]["acc"] <= 1
    assert state["pair"] is not None  # the next round's questions

    (tmp_path / "label" / state_weights(tmp_path)).write_bytes(b"damaged")
    reopened = LabellingSession(config, data, tmp_path / "label", SCHEDULE, "random", runtime)
    client = TestClient(create_app(reopened), raise_server_exceptions=False)
    answer_from_labels(reopened, reopened.run.inputs.y_train, count=1)
    client.post("/api/retrain")
    failed = wait_idle(client)
    assert failed["training"]["phase"] == "failed" and "cannot be loaded" in failed["training"]["message"]


def state_weights(tmp_path):
    import json

    return json.loads((tmp_path / "label" / "state.json").read_text())["weights"]


def test_images_are_served_as_png(tmp_path):
    config = RunConfig(dataset="digits", pretrain_epochs=0, pair_tuning_epochs=0, max_train_samples=200)
    session = LabellingSession(config, load_dataset("digits"), tmp_path, SCHEDULE, runtime=RuntimeConfig(verbose=0))
    client = TestClient(create_app(session))
    image = client.get(f"/api/sample/{session.snapshot()['pair'][0]}")
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert image.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert client.get("/api/state").json()["images"] is True


def test_simulation_compares_each_retrain_with_the_curve_to_the_last_digit():
    from experiments.label_simulation import compare

    rounds = pd.DataFrame({"num_pairs": [20, 40], "acc": [0.5, 0.75], "nmi": [0.1, 0.2], "ari": [0.0, 0.3]})
    curves = pd.DataFrame(
        {
            "strategy": ["anchor"] * 2 + ["random"] * 2,
            "seed": [0] * 4,
            "num_pairs": [20, 40] * 2,
            "acc": [0.5, 0.75, 0.5, 0.7],
            "nmi": [0.1, 0.2 + 1e-12, 0.1, 0.2],
            "ari": [0.0, 0.3, 0.0, 0.3],
        }
    )
    assert compare(rounds, curves, "anchor", 0)["same"].tolist() == [True, False]
    assert compare(rounds, curves, "random", 0)["same"].tolist() == [True, False]
    assert compare(rounds.iloc[:1], curves, "random", 0)["same"].tolist() == [True]


@pytest.mark.slow
def test_a_person_labels_in_chromium_through_a_restart_and_a_retrain(tmp_path):
    from experiments.label_browser import LabellingPage, LabelServer, chromium

    flags = [
        "--dataset=digits",
        "--max_train_samples=300",
        "--pretrain_epochs=0",
        "--pair_tuning_epochs=0",
        "--start_pairs=24",
        "--budgets=40",
        "--start_epochs=1",
        "--round_epochs=1",
        "--batch_size=32",
        "--threads=1",
        "--verbose=0",
        "--typical=4",
        f"--label_dir={tmp_path / 'label'}",
        f"--cache_dir={tmp_path / 'cache'}",
    ]
    config = RunConfig(dataset="digits", max_train_samples=300)
    labels = prepare_run(config, load_dataset("digits")).inputs.y_train
    server = LabelServer(flags, tmp_path / "server.log").start()
    browser = chromium()
    try:
        page = LabellingPage(browser, labels)
        page.open(server.url)
        assert page.answer(20) == 20
        page.undo()
        assert page.answered == 19
        server.kill()
        answers = pd.read_csv(tmp_path / "label" / "answers.csv")
        assert len(answers) == 19  # every acknowledged answer survived the kill
        server.start()
        page.open(server.url)
        assert page.answered == 19
        assert page.answer(10) == 5  # the rest of the 24 start pairs, then no more questions
        assert page.pair is None
        page.retrain(timeout=240)
        answers = pd.read_csv(tmp_path / "label" / "answers.csv")
        assert len(answers) == 24 and not answers.duplicated(["i", "j"]).any()
        same = labels[answers["i"]] == labels[answers["j"]]
        assert (answers["weight"] == np.where(same, 1e4, -1e4)).all()  # the confidence the page trains with
        lines = browser.find_elements("css selector", "#clusters .cluster")
        assert len(lines) == 10 and all(line.find_elements("css selector", "img") for line in lines[:1])
        assert browser.find_element("css selector", "#scores").text.count("\n") == 1  # header and one row
        assert page.pair is not None  # round 1's questions
        assert browser.find_element("id", "notice").text == ""  # "no more questions" is gone
        assert page.answer(3) == 3
        browser.save_screenshot(str(tmp_path / "page.png"))
    finally:
        browser.quit()
        server.kill()
