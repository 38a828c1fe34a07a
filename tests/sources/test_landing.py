"""Landing read source by source into raw tables, directly and through the pipeline's cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pandas as pd
from conftest import Demo

from findata.contracts.raw_tables import raw_table_columns
from findata.sources.landing import LANDING_SOURCES, read_source
from findata.sources.landing_cache import BATCH_ROWS, UNITS_FILE, load_source
from findata.sources.raw import write_raw_tables


def _load(
    landing: Path,
    name: str,
    cache: Path,
    database: Path,
    batch_rows: int = BATCH_ROWS,
) -> dict[str, int]:
    return load_source(
        landing,
        name,
        cache,
        database,
        "fingerprint",
        memory_limit="1GB",
        batch_rows=batch_rows,
    )


def _tables_differ(con: duckdb.DuckDBPyConnection, a: str, b: str, table: str) -> list[str]:
    """How raw ``table`` differs between the databases attached as ``a`` and ``b``: column
    names and types, then rows (position included: the order is the landing's)."""

    def columns(catalog: str) -> list[tuple[str, str]]:
        return con.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE "
            "table_catalog = ? AND table_schema = 'raw' AND table_name = ? "
            "ORDER BY ordinal_position",
            [catalog, table],
        ).fetchall()

    if columns(a) != columns(b):
        return [f"{table}: columns {columns(a)} vs {columns(b)}"]
    numbered = "SELECT row_number() OVER () AS n, * FROM {}.raw.{}"
    only = [
        con.execute(
            f"SELECT count(*) FROM ({numbered.format(x, table)} EXCEPT ALL "
            f"{numbered.format(y, table)})"
        ).fetchall()[0][0]
        for x, y in ((a, b), (b, a))
    ]
    return [f"{table}: rows only in one {only}"] if any(only) else []


def test_cached_loads_equal_direct_reads(small_demo: Demo, tmp_path: Path) -> None:
    """Each source loaded through the cache, cold then warm, and cold in small batches, gives
    the raw tables its frames give: the same columns, types, rows and order."""
    kinds = ("direct", "cold", "warm", "batched")
    databases = {n: tmp_path / f"{n}.duckdb" for n in kinds}
    for name in LANDING_SOURCES:
        write_raw_tables(databases["direct"], read_source(small_demo.landing, name))
        _load(small_demo.landing, name, tmp_path / "cache" / name, databases["cold"])
        _load(small_demo.landing, name, tmp_path / "cache" / name, databases["warm"])
        batches = tmp_path / "batched-cache" / name
        _load(small_demo.landing, name, batches, databases["batched"], batch_rows=5000)
    with duckdb.connect() as con:
        for alias, path in databases.items():
            con.execute(f"ATTACH '{path}' AS {alias} (READ_ONLY)")
        differences = [
            difference
            for source in LANDING_SOURCES.values()
            for table in source.tables
            for a, b in (("direct", kind) for kind in kinds[1:])
            for difference in _tables_differ(con, a, b, table)
        ]
    assert differences == []


def test_a_landing_of_one_source_gives_every_raw_table(small_demo: Demo, tmp_path: Path) -> None:
    """Only the demo's Form 4s landed: every source loads through the cache, each absent
    source's tables empty with the contract's columns and types, the cache giving what the
    direct path gives (an absent source's frames have no columns at all)."""
    landing = tmp_path / "landing"
    shutil.copytree(small_demo.landing / "sec" / "form4", landing / "sec" / "form4")
    cached, direct = tmp_path / "cached.duckdb", tmp_path / "direct.duckdb"
    rows = {}
    for name in LANDING_SOURCES:
        rows.update(_load(landing, name, tmp_path / "cache" / name, cached))
        write_raw_tables(direct, read_source(landing, name))
    form4 = LANDING_SOURCES["sec_form4"].tables
    declared = raw_table_columns()
    assert sorted(rows) == sorted(declared)
    assert all(rows[t] for t in form4) and not any(rows[t] for t in rows if t not in form4)
    with duckdb.connect() as con:
        con.execute(f"ATTACH '{cached}' AS cached (READ_ONLY)")
        con.execute(f"ATTACH '{direct}' AS direct (READ_ONLY)")
        described = {
            table: [(c, k) for c, k, *_ in con.execute(f'DESCRIBE cached.raw."{table}"').fetchall()]
            for table in declared
        }
        differences = [d for t in declared for d in _tables_differ(con, "direct", "cached", t)]
    assert described == declared
    assert differences == []


def _prices(database: Path) -> pd.DataFrame:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute("SELECT * FROM raw.prices").df()


def test_cache_follows_added_changed_and_removed_files(small_demo: Demo, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    shutil.copytree(small_demo.landing / "prices", landing / "prices")
    cache, database = tmp_path / "cache", tmp_path / "warehouse.duckdb"
    _load(landing, "prices", cache, database)
    before = _prices(database)

    extra = landing / "prices" / "prices_extra.csv"
    extra.write_text(
        "entity_id,ticker,date,open,high,low,close,volume\n9999999,ZZZ,2030-01-02,1,2,1,1.5,10\n"
    )
    _load(landing, "prices", cache, database)
    added = _prices(database)
    assert len(added) == len(before) + 1 and added["entity_id"].iloc[-1] == 9999999

    extra.write_text(
        "entity_id,ticker,date,open,high,low,close,volume\n"
        "9999999,ZZZ,2030-01-02,1,2,1,1.75,10\n"
        "9999999,ZZZ,2030-01-03,1,2,1,1.25,10\n"
    )
    _load(landing, "prices", cache, database)
    changed = _prices(database)
    assert changed["close"].tail(2).tolist() == [1.75, 1.25] and len(changed) == len(before) + 2

    extra.unlink()
    _load(landing, "prices", cache, database)
    assert _prices(database).equals(before)


def test_a_cache_file_ahead_of_its_unit_list_is_not_trusted(
    small_demo: Demo, tmp_path: Path
) -> None:
    """A load killed after renaming a table's Parquet file and before writing units.json: the
    rows of units the list does not name are parsed again, never taken twice."""
    landing = tmp_path / "landing"
    shutil.copytree(small_demo.landing / "prices", landing / "prices")
    cache, database = tmp_path / "cache", tmp_path / "warehouse.duckdb"
    _load(landing, "prices", cache, database)
    before = _prices(database)
    held = (cache / UNITS_FILE).read_text()
    extra = landing / "prices" / "prices_extra.csv"
    extra.write_text(
        "entity_id,ticker,date,open,high,low,close,volume\n9999999,ZZZ,2030-01-02,1,2,1,1.5,10\n"
    )
    _load(landing, "prices", cache, database)
    (cache / UNITS_FILE).write_text(held)  # as if the load died before its last write
    _load(landing, "prices", cache, database)
    again = _prices(database)
    assert len(again) == len(before) + 1 and (again["entity_id"] == 9999999).sum() == 1


def test_a_cache_parsed_by_other_readers_is_parsed_again(small_demo: Demo, tmp_path: Path) -> None:
    """After an upgrade whose reader adds a column (the 13F cover total's), the cache holds
    rows the old reader parsed, without it, and no fingerprint of the readers (as every cache
    written before they were kept): every unit is parsed again, so every row has the column,
    as a build from nothing gives it."""
    landing = tmp_path / "landing"
    shutil.copytree(small_demo.landing / "sec" / "13f", landing / "sec" / "13f")
    cache, database = tmp_path / "cache", tmp_path / "warehouse.duckdb"
    _load(landing, "sec_13f", cache, database)
    held = json.loads((cache / UNITS_FILE).read_text())
    held.pop("readers", None)
    held["columns"]["form13f_filings"] = [
        c for c in held["columns"]["form13f_filings"] if c[0] != "cover_total_status"
    ]
    (cache / UNITS_FILE).write_text(json.dumps(held))
    with duckdb.connect() as con:
        for name in held["files"]["form13f_filings"]:
            old, path = tmp_path / name, cache / name
            shutil.move(path, old)
            con.execute(
                f"COPY (SELECT * EXCLUDE (cover_total_status) FROM read_parquet('{old}')) "
                f"TO '{path}' (FORMAT parquet)"
            )
    _load(landing, "sec_13f", cache, database)
    with duckdb.connect(str(database), read_only=True) as con:
        statuses = con.execute(
            "SELECT cover_total_status, count(*) FROM raw.form13f_filings GROUP BY ALL"
        ).fetchall()
    assert statuses == [("equal", len(list((landing / "sec" / "13f").iterdir())))]


def _extra_day(landing: Path, name: str, day: str, close: float) -> None:
    """A price file of one more day for two securities, sorting after every other file."""
    (landing / "prices" / name).write_text(
        "entity_id,ticker,date,open,high,low,close,volume\n"
        f"9999998,ZZY,{day},1,2,1,{close},10\n9999999,ZZZ,{day},1,2,1,{close},20\n"
    )


def _cache_files(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.glob("*.parquet"))


def _differences_from_direct(landing: Path, database: Path, direct: Path) -> list[str]:
    write_raw_tables(direct, read_source(landing, "prices"))
    with duckdb.connect() as con:
        con.execute(f"ATTACH '{direct}' AS direct (READ_ONLY)")
        con.execute(f"ATTACH '{database}' AS cached (READ_ONLY)")
        return _tables_differ(con, "direct", "cached", "prices")


def test_new_files_after_the_held_ones_are_appended_as_a_merge_would_order_them(
    small_demo: Demo, tmp_path: Path
) -> None:
    """Files landing after every held one are parsed into a file of their own and inserted
    after the raw rows (no rewrite); each load equals a direct read of landing (columns, types,
    rows, order). A changed file merges the cache into one file again."""
    landing = tmp_path / "landing"
    shutil.copytree(small_demo.landing / "prices", landing / "prices")
    cache, database = tmp_path / "cache", tmp_path / "warehouse.duckdb"
    _load(landing, "prices", cache, database)
    assert _cache_files(cache) == ["prices.parquet"]

    _extra_day(landing, "prices_extra_1.csv", "2030-01-02", 1.5)
    _extra_day(landing, "prices_extra_2.csv", "2030-01-03", 1.75)
    _load(landing, "prices", cache, database)
    assert _cache_files(cache) == ["prices.1.parquet", "prices.parquet"]
    _extra_day(landing, "prices_extra_3.csv", "2030-01-06", 1.25)
    _load(landing, "prices", cache, database)
    assert _cache_files(cache) == ["prices.1.parquet", "prices.2.parquet", "prices.parquet"]
    assert _differences_from_direct(landing, database, tmp_path / "direct-1.duckdb") == []

    _extra_day(landing, "prices_extra_2.csv", "2030-01-03", 1.9)  # a held file changed
    _load(landing, "prices", cache, database)
    assert _cache_files(cache) == ["prices.parquet"]
    assert _differences_from_direct(landing, database, tmp_path / "direct-2.duckdb") == []
    assert _prices(database)["close"].tail(6).tolist() == [1.5, 1.5, 1.9, 1.9, 1.25, 1.25]


def test_raw_tables_the_cache_did_not_write_are_never_appended_to(
    small_demo: Demo, tmp_path: Path
) -> None:
    """Raw tables written otherwise than by the cache's last load (here directly, as a test
    fixture does) are rebuilt whole from the cache and the new file, not appended to."""
    landing = tmp_path / "landing"
    shutil.copytree(small_demo.landing / "prices", landing / "prices")
    cache, database = tmp_path / "cache", tmp_path / "warehouse.duckdb"
    _load(landing, "prices", cache, database)
    write_raw_tables(database, read_source(landing, "prices"), "prices", "fingerprint")
    _extra_day(landing, "prices_extra_1.csv", "2030-01-02", 1.5)
    _load(landing, "prices", cache, database)
    assert _cache_files(cache) == ["prices.parquet"]  # merged, not appended
    assert _differences_from_direct(landing, database, tmp_path / "direct.duckdb") == []
