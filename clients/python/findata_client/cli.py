"""``findata-python``: the client's command line (``sync`` keeps a local replica current)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Sequence

from findata_client.client import Client
from findata_client.replica import DATASETS, INDEX, Replica


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="findata-python", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    sync = commands.add_parser(
        "sync",
        help="create or bring a local replica (a DuckDB file) up to date from the change feed",
    )
    sync.add_argument("path", help="the replica's DuckDB file (created when missing)")
    sync.add_argument(
        "--datasets",
        default=",".join([*DATASETS, INDEX]),
        help=f"comma list of {', '.join([*DATASETS, INDEX])} (default: all)",
    )
    sync.add_argument("--indexes", help="comma list of index codes (default: every index)")
    sync.add_argument(
        "--every", type=float, metavar="SECONDS", help="sync again every SECONDS until stopped"
    )
    sync.add_argument("--api-key", help="default: $FINDATA_API_KEY")
    sync.add_argument("--base-url", help="default: $FINDATA_BASE_URL")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; prints one JSON report per sync."""
    args = _parser().parse_args(argv)
    client = Client(api_key=args.api_key, base_url=args.base_url)
    replica = Replica(
        args.path,
        [d.strip() for d in args.datasets.split(",") if d.strip()],
        client=client,
        indexes=args.indexes.split(",") if args.indexes else None,
    )
    try:
        while True:
            report = replica.sync()
            print(json.dumps(dataclasses.asdict(report)), flush=True)
            if args.every is None:
                return 0
            time.sleep(args.every)
    except KeyboardInterrupt:
        return 130
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
