"""Compare the results rows (and active-learning curves) of two `scripts/reference_rows.sh` folders, all columns but
the wall time.

    python scripts/compare_rows.py BEFORE AFTER

Prints one line per results.csv / curves.csv of BEFORE and the differing cells; exits with status 1 if any row
differs. Columns renamed since BEFORE was written (``experiments.results.RENAMED``) are compared under their new
names; the configuration keys only where both folders' keys are of one version (``RunConfig.key()``: a new version
hashes the same settings differently).
"""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments.results import with_new_names  # noqa: E402  (after the repository is on the path)
from scripts.migrate_results import key_version  # noqa: E402


def main(before: Path, after: Path) -> int:
    differ = 0
    for path in sorted([*before.glob("*/results.csv"), *before.glob("*/curves.csv")]):
        old, new = pd.read_csv(path), pd.read_csv(after / path.relative_to(before))
        old, new = with_new_names(old), with_new_names(new)
        skipped = {"train_seconds", "seconds"} | ({"config"} if _versions(old) != _versions(new) else set())
        columns = [c for c in old.columns if c not in skipped]
        missing = [c for c in columns if c not in new]
        same = not missing and len(old) == len(new) and old[columns].equals(new[columns])
        extra = sorted(set(new.columns) - set(old.columns))
        print(
            f"{path.parent.name:8s} {len(old)} row(s): {'identical' if same else 'DIFFERENT'}"
            f"{', keys of another version' if 'config' in skipped else ''}"
            f"{f', new columns {extra}' if extra else ''}{f', missing columns {missing}' if missing else ''}"
        )
        if not same and not missing and len(old) == len(new):
            print(old[columns].compare(new[columns]).to_string())
        differ += not same
    return int(differ > 0)


def _versions(rows: pd.DataFrame) -> set[str]:
    """The key versions of ``rows`` (:func:`key_version`)."""
    return {key_version(k) for k in rows["config"].astype(str)} if "config" in rows else set()


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
