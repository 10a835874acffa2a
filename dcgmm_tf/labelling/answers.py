"""The questions of a labelling session and the answers of the people who label, kept on disk after every answer.

A session asks its questions (pairs of training samples) in a fixed order, round by round, and always asks the
first one nobody has decided yet (answered or skipped). Each person (an *annotator*, named by the page) answers a
pair at most once; a pair that two people saw at the same time may get an answer from each. Where they disagree
("same" from one, "different" from another) every answer is kept: the pair's confidence is scaled by the agreement
``(same - different) / (same + different)``, so a pair answered 2 to 1 gets a third of the confidence and a tie none.
The folder holds:

- ``votes.csv``: ``i,j,annotator,answer``, every answer in the order given (``annotator`` "" when the page named
  nobody), the record the other two files are made from;
- ``answers.csv``: ``i,j,weight``, one line per answered pair with ``W_ij`` = ``confidence`` times the agreement
  (+confidence: all said "same", -confidence: all said "different"), the constraints file that
  ``--constraints_file`` reads; a tie is left out;
- ``skipped.csv``: ``i,j``, the pairs that were only skipped;
- ``questions.csv``: ``i,j,round``, every pair asked so far in order.

Every change writes its files together (:func:`dcgmm_tf.storage.replace_together`, ``votes.csv`` last): a process
killed at any moment loses no answer it has acknowledged, and a write that fails (a full disk) changes no file.
A folder written before ``votes.csv`` existed is read from its answers and skipped pairs.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
from pathlib import Path
from typing import Any

import numpy as np

from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.constraints.csv_io import read_pairs, write_pairs
from dcgmm_tf.storage import replace_together, write_atomically

ANSWERS = {"same": 1.0, "different": -1.0, "skip": 0.0}
MAX_ANNOTATOR_LENGTH = 64


class AnswerError(ValueError):
    """An answer that cannot be recorded: a pair that is not asked now, or one this person has answered already."""


@dataclasses.dataclass(frozen=True)
class Vote:
    """One person's answer to one pair: ``(i, j)`` as asked, who, and "same", "different" or "skip"."""

    i: int
    j: int
    annotator: str
    answer: str


def check_annotator(name: Any) -> str:
    """``name`` when it can name a person who labels: a string of at most :data:`MAX_ANNOTATOR_LENGTH` printable
    characters ("" names nobody).

    Raises:
      ValueError: For anything else, saying what is wrong.
    """
    if not isinstance(name, str):
        raise ValueError(f"annotator must be a string, got {type(name).__name__}")
    if len(name) > MAX_ANNOTATOR_LENGTH or not name.isprintable():
        raise ValueError(f"annotator must be at most {MAX_ANNOTATOR_LENGTH} printable characters, got {name[:80]!r}")
    return name


class AnswerBook:
    """The questions and answers of one labelling folder (see the module docstring).

    Not thread-safe: the session serialises the calls.

    Args:
      folder: Where the CSV files are (made if missing); the files found there are read back, and ``answers.csv``
        and ``skipped.csv`` are brought up to date with ``votes.csv``.
      num_samples: The number of training samples the pairs index.
      confidence: ``|W_ij|`` of a pair everybody answered alike, written to ``answers.csv``.

    Raises:
      ValueError: On a damaged file, pairs out of range, or answers to pairs that were never asked.
    """

    def __init__(self, folder: str | os.PathLike, num_samples: int, confidence: float = 1.0):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.num_samples = num_samples
        self.confidence = float(confidence)
        self.pairs = np.zeros((0, 2), np.int64)
        self.rounds = np.zeros(0, np.int64)
        self.votes: list[Vote] = []
        self._asked: dict[tuple[int, int], int] = {}  # pair -> its position among the questions
        # per decided pair, in the order of the questions, how many said "same", "different" and "skip"
        self._counts: dict[tuple[int, int], dict[str, int]] = {}
        self._voters: dict[tuple[int, int], set[str]] = {}  # pair -> who answered it
        self._read()
        if self.votes_path.exists():
            self._write()  # a process killed between the renames of one change left answers.csv or skipped.csv new

    @property
    def questions_path(self) -> Path:
        return self.folder / "questions.csv"

    @property
    def votes_path(self) -> Path:
        return self.folder / "votes.csv"

    @property
    def answers_path(self) -> Path:
        return self.folder / "answers.csv"

    @property
    def skipped_path(self) -> Path:
        return self.folder / "skipped.csv"

    def _read(self) -> None:
        if self.questions_path.exists():
            rows = self._rows(self.questions_path, ("i", "j", "round"))
            table = np.array([[int(r["i"]), int(r["j"]), int(r["round"])] for r in rows], np.int64).reshape(-1, 3)
            if table.size and ((table[:, :2] < 0).any() or (table[:, :2] >= self.num_samples).any()):
                raise ValueError(f"{self.questions_path} has pairs outside the {self.num_samples} training samples")
            self.pairs, self.rounds = table[:, :2], table[:, 2]
        self._asked = {self._key(i, j): position for position, (i, j) in enumerate(self.pairs)}
        if self.votes_path.exists():
            votes = []
            for row in self._rows(self.votes_path, ("i", "j", "annotator", "answer")):
                if row["answer"] not in ANSWERS:
                    raise ValueError(f"{self.votes_path} is damaged: unknown answer {row['answer']!r}")
                votes.append(Vote(int(row["i"]), int(row["j"]), row["annotator"], row["answer"]))
        else:  # written before votes.csv: one answer per pair, by nobody named, in the order of the questions
            found: dict[tuple[int, int], str] = {}
            if self.answers_path.exists():
                for a, b, w in zip(*read_pairs(self.answers_path, self.num_samples)):
                    found[self._key(a, b)] = "same" if w > 0 else "different"
            if self.skipped_path.exists():
                for row in self._rows(self.skipped_path, ("i", "j")):
                    found[self._key(int(row["i"]), int(row["j"]))] = "skip"
            votes = [Vote(int(a), int(b), "", found[key]) for a, b in self.pairs if (key := self._key(a, b)) in found]
            unasked = set(found) - set(self._asked)
            if unasked:
                a, b = min(unasked)
                raise ValueError(f"the answer to pair ({a}, {b}) in {self.folder} answers no question asked")
        for vote in votes:
            if self._key(vote.i, vote.j) not in self._asked:
                raise ValueError(f"the answer to pair ({vote.i}, {vote.j}) in {self.folder} answers no question asked")
        self._hold(votes)

    @staticmethod
    def _rows(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
        """The rows of a CSV file written here, or ValueError naming it when it lacks ``columns`` or an integer
        index is not one."""
        with open(path, newline="", encoding="utf-8") as f:
            try:
                rows = list(csv.DictReader(f))
                for row in rows:
                    for name in columns:
                        if row[name] is None:
                            raise ValueError(f"no {name}")
                        if name in ("i", "j", "round"):
                            int(row[name])
            except (KeyError, TypeError, ValueError, csv.Error) as error:
                raise ValueError(f"{path} is damaged (need columns {','.join(columns)}): {error}") from None
        return rows

    @staticmethod
    def _key(i: int, j: int) -> tuple[int, int]:
        return (int(min(i, j)), int(max(i, j)))

    def ask(self, pairs: np.ndarray, round_number: int) -> None:
        """Appends ``pairs`` (``[n, 2]``) as the questions of ``round_number``; pairs asked before are left out."""
        new = [p for p in np.asarray(pairs, np.int64).reshape(-1, 2) if self._key(*p) not in self._asked]
        pairs = np.concatenate([self.pairs, np.asarray(new, np.int64).reshape(-1, 2)])
        rounds = np.concatenate([self.rounds, np.full(len(new), round_number, np.int64)])
        text = "i,j,round\n" + "".join(f"{i},{j},{r}\n" for (i, j), r in zip(pairs, rounds))
        write_atomically(self.questions_path, lambda tmp: tmp.write_text(text))
        self.pairs, self.rounds = pairs, rounds
        self._asked = {self._key(i, j): position for position, (i, j) in enumerate(pairs)}

    def _hold(self, votes: list[Vote]) -> None:
        """Makes ``votes`` the book's answers, with their counts per pair."""
        counts: dict[tuple[int, int], dict[str, int]] = {}
        voters: dict[tuple[int, int], set[str]] = {}
        for vote in votes:
            key = self._key(vote.i, vote.j)
            counts.setdefault(key, dict.fromkeys(ANSWERS, 0))[vote.answer] += 1
            voters.setdefault(key, set()).add(vote.annotator)
        self.votes, self._voters = votes, voters
        self._counts = dict(sorted(counts.items(), key=lambda item: self._asked[item[0]]))

    def next_question(self) -> int | None:
        """The position of the first question nobody has decided yet (None: all are decided)."""
        return next((position for key, position in self._asked.items() if key not in self._counts), None)

    def record(self, i: int, j: int, answer: str, annotator: str = "") -> None:
        """Records ``annotator``'s ``answer`` (one of :data:`ANSWERS`) to the pair ``(i, j)``: the question asked
        now, or one that somebody else has decided (a second opinion).

        Raises:
          AnswerError: If ``annotator`` has answered ``(i, j)`` already, or nobody has and it is not the question
            asked now.
          ValueError: On an unknown answer or a bad annotator name (:func:`check_annotator`).
          DiskFullError: When the files cannot be written; nothing is recorded.
        """
        if not isinstance(answer, str) or answer not in ANSWERS:
            raise ValueError(f"answer must be one of {sorted(ANSWERS)}, got {answer!r}")
        check_annotator(annotator)
        key = self._key(i, j)
        voters = self._voters.get(key, set())
        if annotator in voters:
            raise AnswerError(f"pair ({i}, {j}) is answered already" + (f" by {annotator}" if annotator else ""))
        position = self.next_question()
        if not voters and (position is None or self._asked.get(key) != position):
            raise AnswerError(f"pair ({i}, {j}) is not the question asked now")
        asked = tuple(int(v) for v in self.pairs[self._asked[key]])
        self._change([*self.votes, Vote(*asked, annotator, answer)])

    def undo(self, annotator: str = "") -> tuple[int, int] | None:
        """Forgets ``annotator``'s last answer (or skip) and returns its pair (None: nothing to undo).

        Raises:
          DiskFullError: When the files cannot be written; nothing is forgotten.
        """
        mine = [k for k, vote in enumerate(self.votes) if vote.annotator == annotator]
        if not mine:
            return None
        gone = self.votes[mine[-1]]
        self._change([vote for k, vote in enumerate(self.votes) if k != mine[-1]])
        return self._key(gone.i, gone.j)

    def _change(self, votes: list[Vote]) -> None:
        """Writes the files of ``votes`` and then holds them; a failed write leaves files and book as they were."""
        before = self.votes
        self._hold(votes)
        try:
            self._write()
        except BaseException:
            self._hold(before)
            raise

    def _write(self) -> None:
        """Writes ``answers.csv``, ``skipped.csv`` and, last, ``votes.csv`` together."""
        votes = io.StringIO()
        table = csv.writer(votes, lineterminator="\n")
        table.writerow(["i", "j", "annotator", "answer"])
        table.writerows([vote.i, vote.j, vote.annotator, vote.answer] for vote in self.votes)
        skipped = [key for key, count in self._counts.items() if count["same"] + count["different"] == 0]
        skipped_text = "i,j\n" + "".join(f"{a},{b}\n" for a, b in (self._asked_pair(key) for key in skipped))
        i, j, weight = self._weights()
        text = votes.getvalue()
        replace_together(
            [
                (self.answers_path, lambda tmp: write_pairs(tmp, i, j, weight)),
                (self.skipped_path, lambda tmp: tmp.write_text(skipped_text)),
                (self.votes_path, lambda tmp: tmp.write_text(text, encoding="utf-8")),
            ]
        )

    def _asked_pair(self, key: tuple[int, int]) -> tuple[int, int]:
        i, j = self.pairs[self._asked[key]]
        return int(i), int(j)

    def _weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(i, j, W_ij)`` of the answered pairs without a tie, in the order of the questions."""
        rows = [
            (*self._asked_pair(key), self.confidence * agreement(count))
            for key, count in self._counts.items()
            if count["same"] != count["different"]
        ]
        i = np.array([r[0] for r in rows], np.int64)
        j = np.array([r[1] for r in rows], np.int64)
        return i, j, np.array([r[2] for r in rows], np.float32)

    @property
    def num_decided(self) -> int:
        """The number of pairs somebody has answered or skipped."""
        return len(self._counts)

    @property
    def num_answered(self) -> int:
        """The number of pairs somebody has answered "same" or "different"."""
        return sum(count["same"] + count["different"] > 0 for count in self._counts.values())

    @property
    def num_skipped(self) -> int:
        """The number of pairs that were only skipped."""
        return self.num_decided - self.num_answered

    def disagreements(self) -> list[dict[str, int]]:
        """The pairs answered "same" by some and "different" by others: ``{"i", "j", "same", "different"}`` each,
        in the order of the questions."""
        return [
            {"i": a, "j": b, "same": count["same"], "different": count["different"]}
            for key, count in self._counts.items()
            if count["same"] and count["different"]
            for a, b in [self._asked_pair(key)]
        ]

    def constraints(self) -> ConstraintSet:
        """The answers as constraints: ``W_ij`` = ``confidence`` times the pair's agreement (ties left out)."""
        return ConstraintSet(*self._weights(), self.num_samples)


def agreement(count: dict[str, int]) -> float:
    """``(same - different) / (same + different)`` of a pair's answers: +1 all "same", -1 all "different"."""
    return (count["same"] - count["different"]) / (count["same"] + count["different"])
