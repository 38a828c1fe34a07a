"""The long schemathesis run: ``tests/api/test_schemathesis.py`` with many more generated
requests per route (each sent with a key of every plan and without one) against a real server
on the small demo; prints the requests sent by status and every failure.

    .venv/bin/python benchmarks/fuzz_api.py [--examples 300]

The test suite runs the same test with 12 examples per route (about a thousand requests).
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
    args = parser.parse_args()
    env = {**os.environ, "FINDATA_FUZZ_EXAMPLES": str(args.examples)}
    command = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
               "--show-capture=no", "tests/api/test_schemathesis.py"]  # fmt: skip
    raise SystemExit(subprocess.call(command, cwd=ROOT, env=env))


if __name__ == "__main__":
    main()
