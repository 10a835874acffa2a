"""The questions of a labelling session and the person's answers, kept on disk after every answer.

A session asks its questions (pairs of training samples) in a fixed order, round by round, and always asks the
first one not yet decided. So the answers are a prefix of the questions (the undone ones excepted), the last
decision is the decided question latest in that order, and a pair can never be decided twice. The folder holds:

- ``questions.csv``: ``i,j,round``, every pair asked so far in order;
- ``answers.csv``: ``i,j,weight`` with +1 ("same") or -1 ("different"), the constraints file that
  ``--constraints_file`` reads (with ``--alpha`` for the confidence);
- ``skipped.csv``: ``i,j``, the pairs the person skipped.

Every change rewrites the file it touches atomically (:func:`dcgmm_tf.storage.write_atomically`): a process killed
at any moment loses no answer it has acknowledged.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.constraints.csv_io import read_pairs, write_pairs
from dcgmm_tf.storage import write_atomically

ANSWERS = {"same": 1.0, "different": -1.0, "skip": 0.0}


class AnswerError(ValueError):
    """An answer that cannot be recorded: a pair that is not the one asked, or one decided already."""


class AnswerBook:
    """The questions and answers of one labelling folder (see the module docstring).

    Not thread-safe: the session serialises the calls.

    Args:
      folder: Where the three CSV files are (made if missing); the files found there are read back.
      num_samples: The number of training samples the pairs index.

    Raises:
      ValueError: On a damaged file, pairs out of range, or answers to pairs that were never asked.
    """

    def __init__(self, folder: str | os.PathLike, num_samples: int):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.num_samples = num_samples
        self.pairs = np.zeros((0, 2), np.int64)
        self.rounds = np.zeros(0, np.int64)
        self.decisions: dict[tuple[int, int], float] = {}
        self._read()

    @property
    def questions_path(self) -> Path:
        return self.folder / "questions.csv"

    @property
    def answers_path(self) -> Path:
        return self.folder / "answers.csv"

    @property
    def skipped_path(self) -> Path:
        return self.folder / "skipped.csv"

    def _read(self) -> None:
        if self.questions_path.exists():
            with open(self.questions_path, newline="") as f:
                rows = list(csv.DictReader(f))
            try:
                table = np.array([[int(r["i"]), int(r["j"]), int(r["round"])] for r in rows], np.int64).reshape(-1, 3)
            except (KeyError, TypeError, ValueError) as error:
                raise ValueError(f"{self.questions_path} is damaged (need columns i,j,round): {error}") from None
            if table.size and ((table[:, :2] < 0).any() or (table[:, :2] >= self.num_samples).any()):
                raise ValueError(f"{self.questions_path} has pairs outside the {self.num_samples} training samples")
            self.pairs, self.rounds = table[:, :2], table[:, 2]
        asked = {self._key(i, j) for i, j in self.pairs}
        found: list[tuple[int, int, float]] = []
        if self.answers_path.exists():
            i, j, weight = read_pairs(self.answers_path, self.num_samples)
            found += [(int(a), int(b), float(np.sign(w))) for a, b, w in zip(i, j, weight)]
        if self.skipped_path.exists():
            found += [(a, b, 0.0) for a, b in self._read_skipped()]
        for a, b, value in found:
            if self._key(a, b) not in asked:
                raise ValueError(f"the answer to pair ({a}, {b}) in {self.folder} answers no question asked")
            self.decisions[self._key(a, b)] = value

    def _read_skipped(self) -> list[tuple[int, int]]:
        with open(self.skipped_path, newline="") as f:
            try:
                pairs = [(int(r["i"]), int(r["j"])) for r in csv.DictReader(f)]
            except (KeyError, TypeError, ValueError) as error:
                raise ValueError(f"{self.skipped_path} is damaged (need columns i,j): {error}") from None
        return pairs

    @staticmethod
    def _key(i: int, j: int) -> tuple[int, int]:
        return (int(min(i, j)), int(max(i, j)))

    def ask(self, pairs: np.ndarray, round_number: int) -> None:
        """Appends ``pairs`` (``[n, 2]``) as the questions of ``round_number``; pairs asked before are left out."""
        asked = {self._key(i, j) for i, j in self.pairs}
        new = [p for p in np.asarray(pairs, np.int64).reshape(-1, 2) if self._key(*p) not in asked]
        pairs = np.concatenate([self.pairs, np.asarray(new, np.int64).reshape(-1, 2)])
        rounds = np.concatenate([self.rounds, np.full(len(new), round_number, np.int64)])
        text = "i,j,round\n" + "".join(f"{i},{j},{r}\n" for (i, j), r in zip(pairs, rounds))
        write_atomically(self.questions_path, lambda tmp: tmp.write_text(text))
        self.pairs, self.rounds = pairs, rounds

    def next_question(self) -> int | None:
        """The position of the first question not yet decided (None: all are)."""
        for position, (i, j) in enumerate(self.pairs):
            if self._key(i, j) not in self.decisions:
                return position
        return None

    def record(self, i: int, j: int, answer: str) -> None:
        """Records ``answer`` (one of :data:`ANSWERS`) to the pair ``(i, j)``, which must be the next question.

        Raises:
          AnswerError: If ``(i, j)`` is not the next question (decided already, or not asked yet).
          ValueError: On an unknown answer.
        """
        if answer not in ANSWERS:
            raise ValueError(f"answer must be one of {sorted(ANSWERS)}, got {answer!r}")
        key = self._key(i, j)
        if key in self.decisions:
            raise AnswerError(f"pair ({i}, {j}) is answered already")
        position = self.next_question()
        if position is None or self._key(*self.pairs[position]) != key:
            raise AnswerError(f"pair ({i}, {j}) is not the question asked now")
        self.decisions[key] = ANSWERS[answer]
        try:
            self._write(skipped=answer == "skip")
        except BaseException:
            del self.decisions[key]
            raise

    def undo(self) -> tuple[int, int] | None:
        """Forgets the last decision and returns its pair (None: nothing to undo)."""
        decided = [p for p in map(tuple, self.pairs) if self._key(*p) in self.decisions]
        if not decided:
            return None
        key = self._key(*decided[-1])
        value = self.decisions.pop(key)
        try:
            self._write(skipped=value == 0.0)
        except BaseException:
            self.decisions[key] = value
            raise
        return key

    def _write(self, skipped: bool) -> None:
        """Rewrites the file of the skipped pairs or that of the answers, in the order of the questions."""
        decided = [(int(i), int(j)) for i, j in self.pairs if self._key(i, j) in self.decisions]
        chosen = [p for p in decided if (self.decisions[self._key(*p)] == 0.0) == skipped]
        if skipped:
            text = "i,j\n" + "".join(f"{a},{b}\n" for a, b in chosen)
            write_atomically(self.skipped_path, lambda tmp: tmp.write_text(text))
            return
        i = np.array([p[0] for p in chosen], np.int64)
        j = np.array([p[1] for p in chosen], np.int64)
        weight = np.array([self.decisions[self._key(*p)] for p in chosen], np.float32)
        write_atomically(self.answers_path, lambda tmp: write_pairs(tmp, i, j, weight))

    @property
    def num_answered(self) -> int:
        """The number of pairs answered "same" or "different"."""
        return sum(value != 0.0 for value in self.decisions.values())

    @property
    def num_skipped(self) -> int:
        return sum(value == 0.0 for value in self.decisions.values())

    def constraints(self, weight: float) -> ConstraintSet:
        """The answers as constraints, with confidence ``weight`` (W = +weight for "same", -weight otherwise)."""
        answered = [(i, j, v) for (i, j), v in self.decisions.items() if v != 0.0]
        i = np.array([a[0] for a in answered], np.int64)
        j = np.array([a[1] for a in answered], np.int64)
        w = np.array([weight * a[2] for a in answered], np.float32)
        return ConstraintSet(i, j, w, self.num_samples)
