"""Files that are never seen half-written, and short names derived from settings."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np


def write_atomically(path: str | os.PathLike, write: Callable[[Path], Any]) -> None:
    """Calls ``write(tmp)`` on a temporary file next to ``path``, syncs it to disk, then renames it to ``path``.

    A process killed at any moment leaves either the old file or the new one, never a partial file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def settings_hash(settings: dict[str, Any]) -> str:
    """A short stable hash of JSON-serialisable settings (12 hex digits; key order does not matter)."""
    return hashlib.sha1(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:12]


def array_hash(x: np.ndarray) -> str:
    """The SHA-1 of an array's bytes in C order (40 hex digits): names a file after the data it was made from."""
    return hashlib.sha1(np.ascontiguousarray(x).tobytes()).hexdigest()
