"""Benchmark: what reading one entity's rows costs from a version's parts, against the same rows
held as a DuckDB table (how versions stored them before parts) and as one Parquet file.

    .venv/bin/python benchmarks/published_reads.py --home H [--dataset prices] [--rounds 5]

``H`` is a home with a published version (``findata demo --no-serve``). Each round asks every
layout, in turn, for the rows of the same ``--queries`` random entities (the API's row store
asks this once per entity and version); prints milliseconds per query, each round and the
median. The API serves repeated windows from its row store, so this is the cost of an entity's
first request after a new version.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from findata.published.versions import attach_version, detach_version, open_version

ROW_GROUPS = (8_192, 16_384, 122_880)  # the last is DuckDB's default


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--dataset", default="prices")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    (version,) = sorted((args.home / "published").glob("*.duckdb"))[-1:]
    served = open_version(version)
    work = Path(tempfile.mkdtemp(prefix="findata-reads-"))
    dataset = f'"{args.dataset}"'
    with duckdb.connect(str(work / "table.duckdb")) as con:
        attach_version(con, version, "served")
        con.execute(f"CREATE TABLE {dataset} AS SELECT * FROM served.{dataset} ORDER BY ALL")
        detach_version(con, "served")
        ((rows,),) = con.execute(f"SELECT count(*) FROM {dataset}").fetchall()
        for size in ROW_GROUPS:
            con.execute(
                f"COPY {dataset} TO '{work}/rows-{size}.parquet' "
                f"(FORMAT parquet, ROW_GROUP_SIZE {size})"
            )
    table = duckdb.connect(str(work / "table.duckdb"), read_only=True)
    files = duckdb.connect()
    files.execute("SET parquet_metadata_cache = true")
    layouts = {
        "version (parts, as served)": (served, dataset),
        "DuckDB table": (table, dataset),
        **{
            f"one Parquet file, row groups of {size:,}": (
                files,
                f"read_parquet('{work}/rows-{size}.parquet')",
            )
            for size in ROW_GROUPS
        },
    }
    listed = served.execute(f"SELECT DISTINCT entity_id FROM {dataset}").fetchall()
    entities = [entity for (entity,) in listed]
    print(f"{version.name}: {args.dataset}, {rows:,} rows, {len(entities):,} entities")
    figures: dict[str, list[float]] = {name: [] for name in layouts}
    picker = random.Random(1)
    for _ in range(args.rounds):
        sample = picker.sample(entities, min(args.queries, len(entities)))
        for name, (con, relation) in layouts.items():
            cursor = con.cursor()
            started = time.perf_counter()
            for entity in sample:
                cursor.execute(
                    f"SELECT * FROM {relation} WHERE entity_id = ? ORDER BY ALL", [entity]
                ).fetchall()
            figures[name].append((time.perf_counter() - started) * 1000 / len(sample))
    for name, values in figures.items():
        each = " ".join(f"{v:.2f}" for v in values)
        print(f"{name:42} {statistics.median(values):6.2f} ms/query  ({each})")


if __name__ == "__main__":
    main()
