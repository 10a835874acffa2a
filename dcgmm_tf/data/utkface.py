"""UTKFace (Zhang et al., CVPR 2017): face crops labelled through their file names.

File names are `age_gender_race_datetime.jpg` (the aligned-and-cropped release appends `.chip.jpg`):
gender 0 = male, 1 = female; race 0 = White, 1 = Black, 2 = Asian, 3 = Indian, 4 = Others. The paper's
two tasks (Sec. 4 and the appendix), with images resized to 64x64x3, 2N constraints and a latent size of 50:

- `gender`: all faces, labels = gender.
- `ethnicity`: ages 18 to 50 and races White, Black, Asian, Indian (about 11,000 faces), labels = race.

UTKFace has no stable direct download link: get `UTKFace.tar.gz` from https://susanqq.github.io/UTKFace/
and extract it so that the images sit in `<data>/utkface/UTKFace/` (or `<data>/UTKFace/`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import numpy as np
from absl import logging

from dcgmm_tf.data import paths
from dcgmm_tf.data.dataset import DataSplits
from dcgmm_tf.data.image_folder import read_images, split_images

RACES = ("White", "Black", "Asian", "Indian", "Others")
GENDERS = ("male", "female")
# Of each searched folder (see `paths.search_dirs`): the images are in UTKFace/ of the extracted archive.
SUBFOLDERS = ("utkface/UTKFace", "utkface", "UTKFace")
_NAME = re.compile(r"^(\d+)_([01])_([0-4])_\d+\.jpg(\.chip\.jpg)?$", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Task:
    """Which faces to keep and which attribute is the label."""

    label: str  # "gender" or "race"
    min_age: int = 0
    max_age: int = 200
    races: tuple[int, ...] = (0, 1, 2, 3, 4)


TASKS = {"gender": Task("gender"), "ethnicity": Task("race", min_age=18, max_age=50, races=(0, 1, 2, 3))}


def parse_name(name: str) -> tuple[int, int, int] | None:
    """(age, gender, race) from a UTKFace file name, or None if the name does not follow the pattern."""
    match = _NAME.match(name)
    return None if match is None else (int(match[1]), int(match[2]), int(match[3]))


def select(files: list[Path], task: Task) -> tuple[list[Path], np.ndarray]:
    """The files of the task's faces and their labels (0..K-1); malformed names are skipped with a warning."""
    kept, labels, malformed = [], [], 0
    for path in files:
        parsed = parse_name(path.name)
        if parsed is None:
            malformed += 1
            continue
        age, gender, race = parsed
        if task.min_age <= age <= task.max_age and race in task.races:
            kept.append(path)
            labels.append(gender if task.label == "gender" else task.races.index(race))
    if malformed:
        logging.warning("UTKFace: skipped %d file(s) whose names are not age_gender_race_date.jpg", malformed)
    return kept, np.asarray(labels, np.int64)


def find_folder(data_dir: str | os.PathLike | None = None) -> tuple[Path | None, list[Path]]:
    """The first folder holding UTKFace images, and every folder searched."""
    searched = paths.search_dirs(SUBFOLDERS, data_dir)
    for n, folder in enumerate(searched):
        if folder.is_dir() and any(parse_name(p.name) for p in folder.iterdir()):
            return folder, searched[: n + 1]
    return None, searched


def load_utkface(
    task: str = "gender", data_dir: str | os.PathLike | None = None, *, image_size: int = 64, seed: int = 0
) -> DataSplits:
    """UTKFace for `task` ("gender" or "ethnicity") as RGB images in [0, 1] with a seeded 80/20 split.

    Raises:
      ValueError: On an unknown task or when no face is left after selection.
      FileNotFoundError: If no UTKFace folder is found (the message says where to put it).
    """
    if task not in TASKS:
        raise ValueError(f"Unknown UTKFace task {task!r}; choose one of {sorted(TASKS)}")
    folder, searched = find_folder(data_dir)
    if folder is None:
        where = "\n".join(f"  {p}" for p in searched)
        raise FileNotFoundError(
            f"UTKFace images (age_gender_race_date.jpg) not found in:\n{where}\nUTKFace has no stable direct "
            "download link: get UTKFace.tar.gz (aligned & cropped faces) from https://susanqq.github.io/UTKFace/, "
            f"extract it into {paths.REPO_DATA_DIR}/utkface (giving utkface/UTKFace/*.jpg), $DCGMM_DATA or "
            "--data_dir. See data/README.md."
        )
    files, labels = select(sorted(p for p in folder.iterdir() if p.is_file()), TASKS[task])
    if len(files) < 2:
        raise ValueError(f"{folder}: only {len(files)} face(s) match the {task} task")
    images = read_images(files, image_size, channels=3)
    spec = TASKS[task]
    names = GENDERS if spec.label == "gender" else tuple(RACES[r] for r in spec.races)
    return split_images(images, labels, f"utkface_{task}", seed=seed, class_names=names)
