"""The published-version store: which version is current and where its file is.

The pipeline writes versions (``findata.orchestration.publish``); the API reads them. The
current version is the newest row of ``versions``; its file under ``published/`` never
changes once written, nor do the part files it reads its datasets from (below).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import sqlalchemy as sa

from findata.control_plane import schema
from findata.control_plane.database import engine_for


def current_version(connection: sa.Connection) -> sa.Row | None:
    """The current version's row (the newest), or None before the first publish."""
    versions = schema.versions
    return connection.execute(sa.select(versions).order_by(versions.c.id.desc()).limit(1)).first()


def current_version_at(url: str) -> sa.Row | None:
    """The current version's row on the control plane at ``url`` (on a connection of its own)."""
    with engine_for(url).connect() as connection:
        return current_version(connection)


# -- the layout of a version on disk ------------------------------------------------------------
#
# A version is ``published/<label>.duckdb``: one view per dataset over the dataset's parts, and
# the table ``_findata_parts`` naming them. A part is an immutable DuckDB file
# ``published/parts/<stem>.duckdb`` holding one table (the dataset) and named for its content,
# so versions whose rows of a part are equal share the file instead of copying it. A view reads
# its parts through catalogs attached under their stems, so whoever opens a version attaches its
# parts first (``open_version``, ``attach_version``). A version written before parts existed
# holds its tables itself and has no ``_findata_parts``: it opens the same way.

PARTS_TABLE = "_findata_parts"
PARTS_DIR = "parts"


def holds_parts_table(con: duckdb.DuckDBPyConnection, catalog: str) -> bool:
    """True when the version attached as ``catalog`` reads its datasets from parts."""
    ((found,),) = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_catalog = ? AND table_name = ?",
        [catalog, PARTS_TABLE],
    ).fetchall()  # fetchone would leave the result open, and this DuckDB refuses the next query
    return bool(found)


def version_part_files(con: duckdb.DuckDBPyConnection, catalog: str) -> list[str]:
    """The part files (relative to the published folder) of the version attached as
    ``catalog``; empty for a version that holds its tables itself."""
    if not holds_parts_table(con, catalog):
        return []
    rows = con.execute(f'SELECT DISTINCT file FROM "{catalog}".main.{PARTS_TABLE} ORDER BY 1')
    return [file for (file,) in rows.fetchall()]


def attach_parts(con: duckdb.DuckDBPyConnection, published: Path, files: list[str]) -> None:
    """Attach each part file (read-only) under the name the versions' views read it by."""
    for file in files:
        path = published / file
        con.execute(f"ATTACH IF NOT EXISTS '{path}' AS \"{Path(file).stem}\" (READ_ONLY)")


def attach_version(con: duckdb.DuckDBPyConnection, path: Path, catalog: str) -> None:
    """Attach the version file ``path`` read-only as ``catalog``, with its parts: its datasets
    are then ``catalog.<dataset>``."""
    con.execute(f"ATTACH '{path}' AS \"{catalog}\" (READ_ONLY)")
    attach_parts(con, path.parent, version_part_files(con, catalog))


def detach_version(con: duckdb.DuckDBPyConnection, catalog: str) -> None:
    """Detach the version attached as ``catalog`` (``attach_version``) and its parts."""
    files = version_part_files(con, catalog)
    con.execute(f'DETACH "{catalog}"')
    for file in files:
        con.execute(f'DETACH DATABASE IF EXISTS "{Path(file).stem}"')


def open_version(path: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the version file ``path`` whose datasets are its default tables
    (cursors made from it see the same parts)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        ((catalog,),) = con.execute("SELECT current_database()").fetchall()
        attach_parts(con, path.parent, version_part_files(con, catalog))
    except BaseException:
        con.close()
        raise
    return con
