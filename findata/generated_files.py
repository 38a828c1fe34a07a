"""Files generated from the contracts and committed (the Python client's ``spec.py``,
``errors.py`` and ``client.py``; ``docs/api.md``): one command line for their generators, which
writes the files into their folder, or with ``--check`` says whether the committed copies are
current (the tests run the check)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path


def generator_main(
    argv: list[str] | None,
    *,
    description: str,
    folder: Path,
    render: Callable[[], Mapping[str, str]],
    command: str,
) -> int:
    """Write each file of ``render()`` (its text by file name) into ``--output-dir`` (default
    ``folder``), or with ``--check`` compare instead: exit 1, naming the files that are missing
    or differ and ``command`` to run."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--output-dir", type=Path, default=folder, help="default: %(default)s")
    args = parser.parse_args(argv)
    texts = render()
    if args.check:
        stale = [
            name
            for name, text in texts.items()
            if not (args.output_dir / name).exists()
            or (args.output_dir / name).read_text(encoding="utf-8") != text
        ]
        if stale:
            print(
                f"{', '.join(stale)} in {args.output_dir}: out of date with the contracts; run "
                f"{command}",
                file=sys.stderr,
            )
            return 1
        print(f"{', '.join(texts)} in {args.output_dir}: up to date")
        return 0
    for name, text in texts.items():
        (args.output_dir / name).write_text(text, encoding="utf-8")
        print(f"wrote {args.output_dir / name}")
    return 0
