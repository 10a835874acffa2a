"""Files that are never seen half-written, whose damage is detected when they are read back, and short names
derived from settings.

A file written with ``checksum=True`` gets a sidecar ``<name>.sha256`` holding its SHA-256 and size; ``damage``
compares them on reading, so a truncated, emptied, overwritten or swapped file is noticed before it is used.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np


def write_atomically(path: str | os.PathLike, write: Callable[[Path], Any], checksum: bool = False) -> None:
    """Calls ``write(tmp)`` on a temporary file next to ``path``, syncs it to disk, then renames it to ``path``;
    with ``checksum``, then writes the sidecar ``<path>.sha256`` the same way (see ``damage``).

    A process killed at any moment leaves either the old file or the new one, never a partial file (between the
    two renames the sidecar is the old one, which ``damage`` reports as a mismatch: the file is then rebuilt).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        digest = _fingerprint(tmp) if checksum else None
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    if digest is not None:
        write_atomically(_sidecar(path), lambda side: side.write_text(digest + "\n"))


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _fingerprint(path: Path) -> str:
    """The fingerprint "<sha256 hex> <size in bytes>" of a file."""
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    return f"{sha.hexdigest()} {path.stat().st_size}"


def damage(path: str | os.PathLike) -> str | None:
    """What is wrong with a file written by ``write_atomically(..., checksum=True)``, or None when it matches its
    sidecar. A file without a sidecar (written by an older version, or by hand) cannot be checked: None."""
    path = Path(path)
    if not path.is_file():
        return "missing"
    size = path.stat().st_size
    if size == 0:
        return "empty (0 bytes)"
    side = _sidecar(path)
    if not side.is_file():
        return None
    try:
        expected_hash, expected_size = side.read_text().split()
        expected_size = int(expected_size)
    except (OSError, UnicodeDecodeError, ValueError):
        return f"its checksum file {side.name} is unreadable"
    if size != expected_size:
        return f"{size} bytes where {expected_size} were written (truncated or overwritten)"
    if _fingerprint(path).split()[0] != expected_hash:
        return "its content does not match the checksum written with it (damaged or replaced)"
    return None


def read_checked(path: str | os.PathLike, read: Callable[[Path], Any]) -> tuple[Any, str | None]:
    """``(read(path), None)``, or ``(None, what is wrong)`` when the file is damaged (see ``damage``) or ``read``
    fails on it (any exception: a damaged file can break a reader in many ways)."""
    problem = damage(path)
    if problem is None:
        try:
            return read(Path(path)), None
        except Exception as e:  # pylint: disable=broad-except
            problem = f"unreadable ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no message'})"
    return None, problem


@contextlib.contextmanager
def exclusive(path: str | os.PathLike | None) -> Iterator[None]:
    """Holds an exclusive lock on ``<path>.lock`` (nothing when ``path`` is None), so that processes sharing a
    folder build a missing file one at a time: the first builds it, the others then find it. The lock dies with
    its process."""
    if path is None:
        yield
        return
    lock = Path(path).with_name(Path(path).name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logging.info("waiting for another process that is writing %s", path)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def array_hash(x: np.ndarray) -> str:
    """The SHA-1 of an array's bytes in C order (40 hex digits): names a file after the data it was made from."""
    return hashlib.sha1(np.ascontiguousarray(x).tobytes()).hexdigest()
