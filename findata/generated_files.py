"""Files generated from the contracts and committed (the Python client's ``_generated.py``,
``docs/api.md``): one command line for their generators, which writes the file, or with
``--check`` says whether the committed copy is current (the tests run the check)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def generator_main(
    argv: list[str] | None,
    *,
    description: str,
    output: Path,
    render: Callable[[], str],
    command: str,
) -> int:
    """Write ``render()`` to ``--output`` (default ``output``), or with ``--check`` compare
    instead: exit 1, naming ``command`` to run, when the file is missing or differs."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--output", type=Path, default=output, help="default: %(default)s")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(
                f"{args.output} is out of date with the contracts: run {command}", file=sys.stderr
            )
            return 1
        print(f"{args.output} is up to date")
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0
