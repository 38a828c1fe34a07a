"""The long schemathesis run: ``tests/api/test_schemathesis.py`` with many more generated
requests per route (each sent with a key of every plan and without one) against a real server
on the small demo, and many more stateful walks; prints the requests sent by status and every
failure.

    .venv/bin/python benchmarks/fuzz_api.py [--examples 300] [--walks 100]

The test suite runs the same tests with 12 examples per route (about a thousand requests) and
8 stateful walks per plan (each up to 6 calls that follow the document's links).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=300, help="per route (default 300)")
    parser.add_argument("--walks", type=int, default=100, help="per plan (default 100)")
    args = parser.parse_args()
    env = {
        **os.environ,
        "FINDATA_FUZZ_EXAMPLES": str(args.examples),
        "FINDATA_FUZZ_WALKS": str(args.walks),
    }
    command = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
               "--show-capture=no", "tests/api/test_schemathesis.py"]  # fmt: skip
    raise SystemExit(subprocess.call(command, cwd=ROOT, env=env))


if __name__ == "__main__":
    main()
