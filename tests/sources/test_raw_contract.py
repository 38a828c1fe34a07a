"""The raw tables' contract (``contracts/raw_tables.yaml``) says what the readers give, and
both ways of writing raw tables (the landing cache, ``write_raw_tables``) hold to it: a reader's
undeclared column is refused, a table without rows still has the declared types."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from conftest import FIXTURES, Demo

from findata.contracts.raw_tables import raw_table_columns
from findata.sources.landing import LANDING_SOURCES, Tables, read_source
from findata.sources.landing_cache import load_source
from findata.sources.raw import write_raw_tables

#: a landing file for each source the demo does not generate: (fixture, name in its folder)
SAMPLES = {
    "sec_company_tickers": (
        FIXTURES / "sec-edgar" / "www" / "files" / "company_tickers_exchange.json",
        "company_tickers_exchange.20240926.json",
    ),
}


def _load(landing: Path, name: str, cache: Path, database: Path) -> dict[str, int]:
    return load_source(landing, name, cache, database, "fingerprint", memory_limit="1GB")


def _columns(database: Path, table: str) -> list[tuple[str, str]]:
    with duckdb.connect(str(database), read_only=True) as con:
        return [
            (name, kind) for name, kind, *_ in con.execute(f'DESCRIBE raw."{table}"').fetchall()
        ]


def _rows(database: Path, table: str) -> int:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(f'SELECT count(*) FROM raw."{table}"').fetchall()[0][0]


def test_every_table_of_every_landing_source_is_declared() -> None:
    tables = [table for source in LANDING_SOURCES.values() for table in source.tables]
    assert sorted(raw_table_columns()) == sorted(tables)


def test_the_readers_give_the_declared_columns_and_types(small_demo: Demo, tmp_path: Path) -> None:
    """What the readers make of the demo's landing (and of a sample file for a source the demo
    does not generate), before anything casts it, has each table's declared columns in order
    and their types: a reader's changed column or type must change the contract with it."""
    frames = {table: f for table, f in small_demo.tables.tables.items() if len(f.columns)}
    for name, (fixture, file_name) in SAMPLES.items():
        folder = tmp_path / "landing" / LANDING_SOURCES[name].folder
        folder.mkdir(parents=True)
        shutil.copyfile(fixture, folder / file_name)
        frames.update((t, f) for t, f in read_source(tmp_path / "landing", name).items() if len(f))
    assert sorted(frames) == sorted(raw_table_columns()), "a table with no demo file or sample"
    differences = {}
    with duckdb.connect() as con:
        for table, frame in frames.items():
            con.register("frame", frame)
            described = [(c, t) for c, t, *_ in con.execute("DESCRIBE frame").fetchall()]
            con.unregister("frame")
            if described != raw_table_columns()[table]:
                differences[table] = described
    assert differences == {}


def _with_reader(
    monkeypatch: pytest.MonkeyPatch, name: str, change: Callable[[pd.DataFrame], pd.DataFrame]
) -> None:
    """Source ``name``'s reader, its frames changed by ``change`` (for this test only)."""
    source = LANDING_SOURCES[name]

    def read_unit(unit: Path) -> Tables:
        return {table: change(frame) for table, frame in source.read_unit(unit).items()}

    monkeypatch.setitem(LANDING_SOURCES, name, dataclasses.replace(source, read_unit=read_unit))


def _price_files(small_demo: Demo, landing: Path, count: int) -> list[Path]:
    """The demo's first ``count`` price files copied into ``landing``."""
    (landing / "prices").mkdir(parents=True)
    files = sorted((small_demo.landing / "prices").glob("*.csv"))[:count]
    return [Path(shutil.copy(path, landing / "prices" / path.name)) for path in files]


def test_a_column_the_contract_lacks_is_refused_by_name(
    small_demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that grew a column: the cache refuses it (merged and appended alike) and leaves
    the raw table as it was; the direct path refuses it too."""
    landing, cache, database = tmp_path / "landing", tmp_path / "cache", tmp_path / "w.duckdb"
    second = _price_files(small_demo, landing, 2)[1]
    second.unlink()  # lands after the first load: appended to it
    _load(landing, "prices", cache, database)
    before = _rows(database, "prices")
    shutil.copy(small_demo.landing / "prices" / second.name, second)
    _with_reader(monkeypatch, "prices", lambda frame: frame.assign(vwap=frame["close"]))
    refused = "raw table prices: column 'vwap' is not declared in raw_tables.yaml"
    with pytest.raises(ValueError, match=refused):
        _load(landing, "prices", cache, database)  # appended
    assert _rows(database, "prices") == before
    with pytest.raises(ValueError, match=refused):
        _load(landing, "prices", tmp_path / "cold-cache", database)  # merged
    with pytest.raises(ValueError, match=refused):
        write_raw_tables(tmp_path / "direct.duckdb", read_source(landing, "prices"))
    assert _rows(database, "prices") == before


def test_a_table_without_rows_has_the_declared_types(
    small_demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Units that give no row of a table, as frames whose columns pandas cannot type (object,
    some left out): the raw table has the declared columns and types all the same, through the
    cache and directly."""
    landing = tmp_path / "landing"
    _price_files(small_demo, landing, 2)
    _with_reader(monkeypatch, "prices", lambda frame: frame.iloc[:0, :4].astype(object))
    cached, direct = tmp_path / "cached.duckdb", tmp_path / "direct.duckdb"
    _load(landing, "prices", tmp_path / "cache", cached)
    write_raw_tables(direct, read_source(landing, "prices"))
    for database in (cached, direct):
        assert _columns(database, "prices") == raw_table_columns()["prices"]
        assert _rows(database, "prices") == 0
