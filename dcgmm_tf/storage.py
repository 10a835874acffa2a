"""Files that are never seen half-written, whose damage is detected when they are read back, and short names
derived from settings.

A file written with ``checksum=True`` gets a sidecar ``<name>.sha256`` holding its SHA-256 and size; ``damage``
compares them on reading, so a truncated, emptied, overwritten or swapped file is noticed before it is used.

A write that finds no space left on its file system (``ENOSPC``, or ``EDQUOT`` for a spent quota) raises
:class:`DiskFullError`, naming the file and saying that it was left as it was.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class DiskFullError(OSError):
    """A file could not be written because its file system is full (or the user's quota is spent). The message names
    the file and what was kept; the command-line programs report it as one ``error:`` line."""

    def __str__(self) -> str:
        return str(self.strerror)  # without OSError's "[Errno 28]" before it


def disk_full(error: OSError, path: str | os.PathLike, kept: str) -> DiskFullError | None:
    """The :class:`DiskFullError` for ``error`` when it says that the disk is full (``kept``: what the user still
    has), or None for any other error."""
    if isinstance(error, DiskFullError) or error.errno not in NO_SPACE:
        return None
    return DiskFullError(
        error.errno,
        f"no space left on the device to write {path} ({error.strerror}): {kept}; free some space and try again",
    )


def write_atomically(path: str | os.PathLike, write: Callable[[Path], Any], checksum: bool = False) -> None:
    """Calls ``write(tmp)`` on a temporary file next to ``path``, syncs it to disk, then renames it to ``path``;
    with ``checksum``, the sidecar ``<path>.sha256`` (see ``damage``) is written with it and renamed after it.

    A process killed at any moment leaves either the old file or the new one, never a partial file (between the
    two renames the sidecar is the old one, which ``damage`` reports as a mismatch: the file is then rebuilt).

    Raises:
      DiskFullError: When the file system has no space for the new file (or its sidecar); both are left as they
        were.
    """
    path = Path(path)
    if not checksum:
        replace_together([(path, write)])
        return
    fingerprint = []

    def write_and_fingerprint(tmp: Path) -> None:
        write(tmp)
        fingerprint.append(_fingerprint(tmp))

    replace_together(
        [(path, write_and_fingerprint), (_sidecar(path), lambda side: side.write_text(fingerprint[0] + "\n"))]
    )


def replace_together(files: Sequence[tuple[str | os.PathLike, Callable[[Path], Any]]]) -> None:
    """Writes each file of ``files`` (``(path, write)``: ``write(tmp)`` fills a temporary file next to ``path``),
    syncs them all to disk, then renames them to their paths in the given order.

    When any write fails (a full disk, say), no file is replaced and the temporary files are removed. A process
    killed between the renames leaves the first files new and the others old: put the file the others are made
    from last.

    Raises:
      DiskFullError: When the file system has no space for the new files; every file is left as it was.
    """
    written: list[tuple[Path, Path]] = []
    try:
        for path, write in files:
            path = Path(path)
            tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
            written.append((tmp, path))
            path.parent.mkdir(parents=True, exist_ok=True)
            write(tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        for tmp, path in written:
            os.replace(tmp, path)
    except OSError as error:
        kept = (
            "it was left as it was"
            if len(files) == 1
            else "none of " + ", ".join(str(p) for p, _ in files) + " changed"
        )
        full = disk_full(error, written[-1][1], kept)
        if full is None:
            raise
        raise full from error
    finally:
        for tmp, _ in written:
            tmp.unlink(missing_ok=True)


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
