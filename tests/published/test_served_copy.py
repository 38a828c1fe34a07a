"""A version's served copy (``findata/published/served_copy.py``): the datasets the budget holds
are native tables with exactly the rows and types of the version file's views; the others stay
views of the version; the smallest are copied first."""

from __future__ import annotations

from pathlib import Path

import pytest

from findata.published.served_copy import VERSION_CATALOG, open_served_copy
from findata.published.versions import open_version, read_part_files, version_part_files


@pytest.fixture(scope="module")
def version_file(published_home: Path) -> Path:
    (path,) = (published_home / "published").glob("*.duckdb")
    return path


def _tables(connection: object, catalog: str) -> dict[str, str]:
    """Name -> type (``BASE TABLE`` or ``VIEW``) of the datasets in ``catalog``."""
    rows = connection.execute(  # type: ignore[attr-defined]
        "SELECT table_name, table_type FROM information_schema.tables "
        "WHERE table_catalog = ? AND table_schema = 'main' AND NOT starts_with(table_name, '_')",
        [catalog],
    ).fetchall()
    return dict(rows)


def test_every_dataset_copied_has_the_views_rows_and_types(version_file: Path) -> None:
    copy = open_served_copy(version_file, 2**30)
    try:
        with open_version(version_file) as version:
            ((catalog,),) = version.execute("SELECT current_database()").fetchall()
            datasets = _tables(version, catalog)
            assert copy.copied == tuple(sorted(datasets)) and copy.viewed == ()
            assert set(_tables(copy.connection, "memory").values()) == {"BASE TABLE"}
            for name in datasets:
                described = f'DESCRIBE SELECT * FROM "{name}"'
                assert copy.connection.execute(described).fetchall() == (
                    version.execute(described).fetchall()
                ), name
                query = f'SELECT * FROM "{name}" ORDER BY ALL'
                theirs = version.execute(query).fetchall()
                assert copy.connection.execute(query).fetchall() == theirs, name
        assert copy.bytes > 0
        attached = version_part_files(copy.connection, VERSION_CATALOG)
        assert sorted(attached) == sorted(read_part_files(version_file))
    finally:
        copy.connection.close()


def test_a_budget_copies_the_smallest_datasets_and_views_the_rest(version_file: Path) -> None:
    nothing = open_served_copy(version_file, 0)
    try:
        assert nothing.copied == () and nothing.bytes == 0
        assert set(_tables(nothing.connection, "memory").values()) == {"VIEW"}
        everything = set(nothing.viewed)
        # prices, the largest, over the budget; the small reference tables in it
        some = open_served_copy(version_file, 4 * 2**20)
        try:
            assert "prices" in some.viewed and {"managers", "entities"} <= set(some.copied)
            assert set(some.copied) | set(some.viewed) == everything
            kinds = _tables(some.connection, "memory")
            assert {kinds[name] for name in some.copied} == {"BASE TABLE"}
            assert {kinds[name] for name in some.viewed} == {"VIEW"}
            # a view reads the attached version file's rows
            count = 'SELECT count(*) FROM "prices"'
            ((viewed,),) = some.connection.execute(count).fetchall()
            ((attached,),) = some.connection.execute(
                f'SELECT count(*) FROM {VERSION_CATALOG}.main."prices"'
            ).fetchall()
            assert viewed == attached > 0
        finally:
            some.connection.close()
    finally:
        nothing.connection.close()
