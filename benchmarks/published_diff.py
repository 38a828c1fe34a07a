"""Compare the current published versions of two FINDATA_HOMEs table by table, every row and
column exactly (EXCEPT ALL both ways): a refactor or a faster pipeline must change no row.

    .venv/bin/python benchmarks/published_diff.py /tmp/home-before /tmp/home-after

Prints what differs, then IDENTICAL or DIFFERENT; exits 1 when they differ. Build both homes on
the same day and seed (``faketime DAY findata demo --no-serve``), or their as_of differs. The
comparison is ``findata.published.diff`` (the pipeline tests use it too).
"""

from __future__ import annotations

import sys
from pathlib import Path

from findata.published.diff import published_differences


def newest_version(home: Path) -> Path:
    """The newest published file of ``home`` (labels sort by time)."""
    return sorted((home / "published").glob("*.duckdb"))[-1]


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    differences = published_differences(*(newest_version(Path(arg)) for arg in sys.argv[1:]))
    for line in differences:
        print(line)
    print("DIFFERENT" if differences else "IDENTICAL")
    sys.exit(1 if differences else 0)
