"""The labelling API under hostile use: thousands of generated requests (hypothesis), and several people answering
one session at once.

The fuzzed session never retrains (a retrain would train a model for every example); every other route is sent
well-formed, malformed and out-of-order requests. After every request the server has answered 2xx or 4xx, and the
folder's files hold exactly the answers the server acknowledged, no more, no fewer.
"""

import asyncio
import csv
import json
import tempfile
import threading
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import httpx2
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from dcgmm_tf import ConstraintSet
from dcgmm_tf.active_loop import ActiveSchedule
from dcgmm_tf.constraints.csv_io import read_pairs
from dcgmm_tf.data import load_dataset
from dcgmm_tf.labelling import AnswerBook, LabellingSession
from dcgmm_tf.labelling.app import MAX_BODY_BYTES, create_app
from tests.helpers import toy_loop_configs

FUZZ_SCHEDULE = ActiveSchedule(start_pairs=300, budgets=(350,), start_epochs=1, round_epochs=1)
REQUESTS_PER_EXAMPLE = 60
FAST_EXAMPLES = 34  # 34 x 60 = 2,040 requests
SLOW_EXAMPLES = 400  # 24,000 requests
ANNOTATORS = ["", "ann", "bob", "Zoë ✓ 田中"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(-(10**40), 10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
indices = st.integers(-3, 403) | st.integers() | json_values
texts = st.sampled_from(ANNOTATORS) | st.text(max_size=80)
names = texts | json_values
# bodies a JSON encoder would not write: lone surrogates, NaN, duplicate keys, invalid UTF-8, a BOM
TRICKY = [
    b'{"i": 0, "j": 1, "answer": "same", "annotator": "\\ud800"}',
    b'{"i": NaN, "j": Infinity, "answer": "same"}',
    b'{"i": 0, "i": 1, "j": 2, "answer": "skip"}',
    b'{"i": 0, "j": 1, "answer": "s\xffme"}',
    b'\xef\xbb\xbf{"i": 0, "j": 1}',
    b'{"i": 1e400, "j": -0, "answer": "same"}',
    b'{"i": 0, "j": 1, "answer": "same", "annotator": "a\\u0000b"}',
    b"null",
    b"",
]

url_texts = st.text(max_size=20).map(lambda t: quote(t, safe=""))  # as a client sends them

# A request is drawn as a tuple, read by `send` against the state of the session at the time it is sent.
requests = st.one_of(
    # a well-formed answer to the pair asked now, or to one asked earlier or later, either way round
    st.tuples(
        st.just("answer"),
        st.integers(-3, 2),  # position relative to the question asked now
        st.booleans(),  # (j, i) instead of (i, j)
        st.sampled_from(["same", "different", "skip"]),
        st.sampled_from(ANNOTATORS),
    ),
    st.tuples(st.just("undo"), st.sampled_from(ANNOTATORS)),
    st.tuples(st.just("undo body"), st.binary(max_size=40) | json_values.map(lambda v: json.dumps(v).encode())),
    # an answer object with fields of any type and any value
    st.tuples(
        st.just("json"),
        st.fixed_dictionaries(
            {},
            optional={
                "i": indices,
                "j": indices,
                "answer": st.sampled_from(["same", "different", "skip", "SAME", "", "?"]) | json_values,
                "annotator": names,
                "extra": json_values,
            },
        ),
    ),
    st.tuples(
        st.just("raw"), st.binary(max_size=200) | st.text(max_size=200).map(str.encode) | st.sampled_from(TRICKY)
    ),
    st.tuples(st.just("any json"), json_values),
    st.tuples(st.just("nested"), st.integers(1, 200_000)),
    st.tuples(st.just("big"), st.integers(MAX_BODY_BYTES - 10, 4 * MAX_BODY_BYTES)),
    st.tuples(st.just("state"), texts),
    st.tuples(st.just("sample"), st.integers(-5, 10**30) | url_texts),
    st.tuples(
        st.just("elsewhere"),
        st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"]),
        st.sampled_from(["/", "/api/answer", "/api/undo", "/api/state", "/api/nothing", "/api/retrain/"])
        | url_texts.map(lambda t: "/" + t),
    ),
)


class Mirror:
    """What the folder must hold: the acknowledged answers (i, j as asked, annotator, answer), in order."""

    def __init__(self, questions: np.ndarray):
        self.questions = [tuple(int(v) for v in q) for q in questions]
        self.votes: list[tuple[int, int, str, str]] = []
        self.acknowledged: list[tuple[int, int, str, str]] = []  # every vote ever accepted, undone ones too

    def accept(self, vote: tuple[int, int, str, str]) -> None:
        self.votes.append(vote)
        self.acknowledged.append(vote)

    def voters(self, pair):
        return [v[2] for v in self.votes if v[:2] == pair]

    def next_position(self):
        decided = {v[:2] for v in self.votes}
        return next((k for k, q in enumerate(self.questions) if q not in decided), None)

    def accepts(self, pair, annotator):
        """The documented rule: one answer per person and pair; an undecided pair only when it is asked now."""
        voters = self.voters(pair)
        return annotator not in voters and (bool(voters) or self.questions.index(pair) == self.next_position())

    def undo(self, annotator):
        mine = [k for k, v in enumerate(self.votes) if v[2] == annotator]
        if mine:
            del self.votes[mine[-1]]
        return bool(mine)

    def tally(self):
        counts = {}
        for i, j, _, answer in self.votes:
            counts.setdefault((i, j), Counter())[answer] += 1
        return [(q, counts[q]) for q in self.questions if q in counts]

    def answered(self):
        return sum(c["same"] + c["different"] > 0 for _, c in self.tally())


def check_folder(folder, mirror: Mirror, confidence: float) -> None:
    """The three files hold exactly the mirror's answers: every vote, the pairs' weights, the skipped pairs."""
    votes = []
    if (folder / "votes.csv").exists():
        with open(folder / "votes.csv", newline="", encoding="utf-8") as f:
            votes = [(int(r["i"]), int(r["j"]), r["annotator"], r["answer"]) for r in csv.DictReader(f)]
    assert votes == mirror.votes, f"the folder's last answers {votes[-3:]}, the acknowledged ones {mirror.votes[-3:]}"
    expected = [(q, c) for q, c in mirror.tally() if c["same"] != c["different"]]
    if (folder / "answers.csv").exists():
        i, j, weight = read_pairs(folder / "answers.csv", 400)  # valid: the reader of --constraints_file
        assert list(zip(i.tolist(), j.tolist())) == [q for q, _ in expected]
        agreement = [(c["same"] - c["different"]) / (c["same"] + c["different"]) for _, c in expected]
        assert weight.astype(np.float32).tolist() == np.float32(confidence * np.array(agreement)).tolist()
    else:
        assert not expected
    skipped = [q for q, c in mirror.tally() if c["same"] + c["different"] == 0]
    if (folder / "skipped.csv").exists():
        with open(folder / "skipped.csv", newline="") as f:
            assert [(int(r["i"]), int(r["j"])) for r in csv.DictReader(f)] == skipped
    else:
        assert not skipped
    assert not list(folder.glob(".tmp-*"))


async def send(client: httpx2.AsyncClient, mirror: Mirror, request: tuple) -> None:
    """Sends one drawn request and checks the answer against the mirror (which it updates on success)."""
    kind, *args = request
    if kind == "answer":
        offset, swap, answer, annotator = args
        now = mirror.next_position()
        position = (len(mirror.questions) if now is None else now) + offset
        if not 0 <= position < len(mirror.questions):
            return await send(client, mirror, ("json", {"i": -1, "j": 0, "answer": answer}))
        pair = mirror.questions[position]
        i, j = pair[::-1] if swap else pair
        accepted = mirror.accepts(pair, annotator)
        response = await client.post("/api/answer", json={"i": i, "j": j, "answer": answer, "annotator": annotator})
        assert response.status_code == (200 if accepted else 409), response.text
        if accepted:
            mirror.accept((*pair, annotator, answer))
            assert response.json()["answered"] == mirror.answered(), (response.json(), mirror.tally(), mirror.votes)
    elif kind == "undo":
        response = await client.post("/api/undo", json={"annotator": args[0]})
        assert response.status_code == (200 if mirror.undo(args[0]) else 409), response.text
    elif kind == "undo body":
        response = await client.post("/api/undo", content=args[0])
        if response.status_code in (200, 409):  # an empty body, or an object naming a person or nobody
            body = json.loads(args[0]) if args[0] else {}
            assert mirror.undo(body.get("annotator") or "") == (response.status_code == 200)
    elif kind == "json":
        body = args[0]
        response = await client.post("/api/answer", content=json.dumps(body).encode())  # NaN and Infinity too
        if response.status_code == 200:
            pair = (min(body["i"], body["j"]), max(body["i"], body["j"]))
            assert pair in mirror.questions and mirror.accepts(pair, body.get("annotator") or "")
            asked = mirror.questions[mirror.questions.index(pair)]
            mirror.accept((*asked, body.get("annotator") or "", body["answer"]))
    elif kind in ("raw", "any json", "nested", "big"):
        content = {
            "raw": lambda n: n,
            "any json": lambda v: json.dumps(v).encode(),
            "nested": lambda d: b"[" * d + b"]" * d,
            "big": lambda n: b'{"i": -1, "j": 1, "answer": "same", "x": "' + b"x" * n + b'"}',
        }[kind](args[0])
        response = await client.post("/api/answer", content=content)
        assert response.status_code in (400, 409, 413), response.text  # never a recorded answer
    elif kind == "state":
        response = await client.get("/api/state", params={"annotator": args[0]})
    elif kind == "sample":
        response = await client.get(f"/api/sample/{args[0]}")
    elif args == ["POST", "/api/undo"]:  # without a body: the last answer of nobody named
        return await send(client, mirror, ("undo body", b""))
    else:
        response = await client.request(args[0], args[1], follow_redirects=False)  # "/api/retrain/": not retrained
    assert 200 <= response.status_code < 500, (request, response.status_code, response.text[:300])
    if response.status_code >= 400:
        assert response.json()["error"] and "Traceback" not in response.text


@pytest.fixture(name="ram_dir")
def fixture_ram_dir(tmp_path):
    """A folder in memory (/dev/shm) where there is one: thousands of answers, each synced to disk, take a minute on a
    busy disk, and the test is about what the files hold, not about the disk."""
    if not Path("/dev/shm").is_dir():
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir="/dev/shm") as folder:
        yield Path(folder)


def fuzz(tmp_path, examples: int) -> int:
    """Sends ``examples`` x REQUESTS_PER_EXAMPLE generated requests to one session; returns how many were sent."""
    config, runtime = toy_loop_configs(tmp_path)
    folder = tmp_path / "label"
    session = LabellingSession(config, load_dataset(config.dataset), folder, FUZZ_SCHEDULE, "random", runtime)
    app = create_app(session)
    mirror = Mirror(session.book.pairs)
    sent = []
    checked_with_answers = False  # whether the folder was checked while it held an answer other than a skip

    async def send_all(batch):  # in this thread: no hand-over to a server thread per request
        nonlocal checked_with_answers
        transport = httpx2.ASGITransport(app=app, raise_app_exceptions=False)  # a failure is a 500
        async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as client:
            for request in batch:
                try:
                    await send(client, mirror, request)
                    if request[0] in ("answer", "undo", "undo body", "json"):
                        check_folder(folder, mirror, session.weight)
                        checked_with_answers = checked_with_answers or any(v[3] != "skip" for v in mirror.votes)
                except AssertionError as error:
                    raise AssertionError(f"request {len(sent) + 1}, {request!r}: {error}") from error
                sent.append(request[0])

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        phases=[Phase.generate],  # the session lives on from example to example: shrinking could not replay one
        report_multiple_bugs=False,
        derandomize=True,  # the same requests at every run: the checks at the end hold for a known sequence
    )
    @given(st.lists(requests, min_size=REQUESTS_PER_EXAMPLE, max_size=REQUESTS_PER_EXAMPLE))
    def run(batch):
        asyncio.run(send_all(batch))

    run()
    check_folder(folder, mirror, session.weight)
    assert TestClient(app).get("/api/state").status_code == 200  # still up
    again = AnswerBook(folder, 400, session.weight)  # a server started again reads the same answers
    assert [(v.i, v.j, v.annotator, v.answer) for v in again.votes] == mirror.votes
    kinds = Counter(sent)
    assert len(kinds) == 11 and min(kinds.values()) >= examples  # every kind of request was sent, many times
    # the files were checked while they held answers, not only skips, and more than one person's were accepted along
    # the way (the votes left at the end may be few, one person's or skips alone: the undos can have taken the rest)
    assert checked_with_answers and len({v[2] for v in mirror.acknowledged}) > 1
    return len(sent)


def test_fuzzed_requests_get_2xx_or_4xx_and_the_files_hold_the_acknowledged_answers(ram_dir):
    assert fuzz(ram_dir, FAST_EXAMPLES) == 2040


@pytest.mark.slow
def test_fuzzed_requests_slow_variant(ram_dir):
    assert fuzz(ram_dir, SLOW_EXAMPLES) == 24_000


def test_two_annotators_at_once_lose_no_answer_and_their_disagreements_lower_the_confidence(ram_dir):
    config, runtime = toy_loop_configs(ram_dir)
    schedule = ActiveSchedule(start_pairs=80, budgets=(100,), start_epochs=1, round_epochs=1)
    folder = ram_dir / "label"
    session = LabellingSession(config, load_dataset(config.dataset), folder, schedule, "random", runtime)
    labels = session.run.inputs.y_train
    app = create_app(session)

    def opinion(name, i, j):
        same = labels[i] == labels[j]
        if name == "bob" and (i + j) % 4 == 0:  # bob sees some pairs the other way
            same = not same
        return "same" if same else "different"

    acknowledged = {"ann": [], "bob": []}

    def annotate(name):
        with TestClient(app) as client:
            while (pair := client.get("/api/state", params={"annotator": name}).json()["pair"]) is not None:
                response = client.post(
                    "/api/answer", json={"i": pair[0], "j": pair[1], "answer": opinion(name, *pair), "annotator": name}
                )
                assert response.status_code in (200, 409), response.text  # 409: the other moved the queue on
                if response.status_code == 200:
                    acknowledged[name].append((*pair, name, opinion(name, *pair)))

    threads = [threading.Thread(target=annotate, args=(name,)) for name in acknowledged]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    with open(folder / "votes.csv", newline="", encoding="utf-8") as f:
        votes = [(int(r["i"]), int(r["j"]), r["annotator"], r["answer"]) for r in csv.DictReader(f)]
    # every acknowledged answer is on disk once, nothing else is, and each person answered a pair at most once
    assert Counter(votes) == Counter(acknowledged["ann"] + acknowledged["bob"])
    assert len(set(votes)) == len(votes) and len({v[:3] for v in votes}) == len(votes)
    assert {v[:2] for v in votes} == {tuple(p) for p in session.book.pairs.tolist()}  # every question decided
    assert acknowledged["ann"] and acknowledged["bob"]

    # Second opinions: dave and carl answer pairs one person answered; where dave disagrees, the pair's confidence
    # falls to 0 (a tie: left out of answers.csv), then to a third once carl sides with the first answer. (Which pairs
    # ann or bob took depends on the threads' timing, so the pairs are picked among all single answers.)
    client = TestClient(app)
    alpha = session.weight
    single = [v for v in votes if sum(w[:2] == v[:2] for w in votes) == 1]
    disputed, agreed = single[0], single[1]
    flip = {"same": "different", "different": "same"}
    for (i, j, _, _), answer in ((disputed, flip[disputed[3]]), (agreed, agreed[3])):
        assert client.post("/api/answer", json={"i": j, "j": i, "answer": answer, "annotator": "dave"})
    again = client.post("/api/answer", json={"i": agreed[0], "j": agreed[1], "answer": "same", "annotator": "dave"})
    assert again.status_code == 409 and "answered already by dave" in again.json()["error"]  # not counted twice
    shown = client.get("/api/state").json()["disagreements"]
    assert {"i": disputed[0], "j": disputed[1], "same": 1, "different": 1} in shown
    exported = ConstraintSet.from_csv(folder / "answers.csv", 400)  # what --constraints_file reads
    weights = {(int(i), int(j)): float(w) for i, j, w in zip(exported.i, exported.j, exported.weight)}
    assert disputed[:2] not in weights  # a tie: no answer
    assert weights[agreed[:2]] == (alpha if agreed[3] == "same" else -alpha)  # agreement keeps the confidence
    carl = {"i": disputed[0], "j": disputed[1], "answer": disputed[3], "annotator": "carl"}
    assert client.post("/api/answer", json=carl).status_code == 200
    exported = ConstraintSet.from_csv(folder / "answers.csv", 400)
    weights = {(int(i), int(j)): float(w) for i, j, w in zip(exported.i, exported.j, exported.weight)}
    sign = 1 if disputed[3] == "same" else -1
    assert weights[disputed[:2]] == pytest.approx(sign * alpha / 3, rel=1e-6)  # 2 to 1: a third of |W|
    trained = session.book.constraints()  # what the next retrain uses
    assert dict(zip(zip(trained.i.tolist(), trained.j.tolist()), trained.weight.tolist())) == pytest.approx(weights)
    assert client.post("/api/undo", json={"annotator": "carl"}).json()["disagreements"] == shown
