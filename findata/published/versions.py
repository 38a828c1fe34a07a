"""The published-version store: which version is current and where its file is.

The pipeline writes versions (``findata.published.publish``); the API reads them. The
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
# the table ``_findata_parts`` naming them. A part is an immutable Parquet file
# ``published/parts/<stem>.parquet`` holding one dataset's rows (all of them, its history or its
# recent rows) and named for its content, so versions whose rows of a part are equal share the
# file instead of copying it. A view names its parts by paths relative to the published folder
# (``read_parquet(['parts/….parquet', …])``), which DuckDB resolves through its
# ``file_search_path`` setting: whoever opens a version sets it (``open_version``,
# ``attach_version``). Parquet files are read, never attached, so no lock or catalog is shared
# between readers. A version written before parts existed holds its tables itself and has no
# ``_findata_parts``: it opens the same way.

PARTS_TABLE = "_findata_parts"
PARTS_DIR = "parts"


def holds_parts_table(con: duckdb.DuckDBPyConnection, catalog: str) -> bool:
    """True when the version attached as ``catalog`` reads its datasets from parts."""
    ((found,),) = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_catalog = ? AND table_name = ?",
        [catalog, PARTS_TABLE],
    ).fetchall()  # fetchone would leave the result open, and this DuckDB refuses the next query
    return bool(found)


def current_catalog(con: duckdb.DuckDBPyConnection) -> str:
    """The catalog of ``con``'s default database (a version opened by ``open_version``)."""
    ((catalog,),) = con.execute("SELECT current_database()").fetchall()
    return str(catalog)


def version_part_files(con: duckdb.DuckDBPyConnection, catalog: str) -> list[str]:
    """The part files (relative to the published folder) of the version attached as
    ``catalog``; empty for a version that holds its tables itself."""
    if not holds_parts_table(con, catalog):
        return []
    rows = con.execute(f'SELECT DISTINCT file FROM "{catalog}".main.{PARTS_TABLE} ORDER BY 1')
    return [file for (file,) in rows.fetchall()]


def search_published(con: duckdb.DuckDBPyConnection, published: Path) -> None:
    """Let the views of versions in ``published`` find their parts from ``con`` (and its
    cursors): the folder joins DuckDB's ``file_search_path``. Part files are named for their
    content, so where two folders are searched a name found in either is the same rows."""
    folder = _search_folder(published)
    ((current,),) = con.execute("SELECT current_setting('file_search_path')").fetchall()
    folders = [f for f in (current or "").split(",") if f]
    if folder not in folders:
        con.execute("SET GLOBAL file_search_path = ?", [",".join([*folders, folder])])


def attach_version(con: duckdb.DuckDBPyConnection, path: Path, catalog: str) -> None:
    """Attach the version file ``path`` read-only as ``catalog``: its datasets are then
    ``catalog.<dataset>``, its parts found through the search path."""
    search_published(con, path.parent)
    con.execute(f"ATTACH '{path}' AS \"{catalog}\" (READ_ONLY)")


def detach_version(con: duckdb.DuckDBPyConnection, catalog: str) -> None:
    """Detach the version attached as ``catalog`` (``attach_version``)."""
    con.execute(f'DETACH "{catalog}"')


def open_version(path: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the version file ``path`` whose datasets are its default tables
    (cursors made from it find the same parts)."""
    # settings are set after connecting, not passed to connect: DuckDB shares one instance per
    # file in a process and refuses a second connect to it with another configuration
    con = duckdb.connect(str(path), read_only=True)
    try:
        search_published(con, path.parent)
        # parts never change once written: their Parquet footers can be kept between queries
        con.execute("SET GLOBAL parquet_metadata_cache = true")
    except BaseException:
        con.close()
        raise
    return con


def read_part_files(path: Path) -> list[str]:
    """The part files (relative to a published folder) the version file ``path`` reads."""
    with open_version(path) as con:
        return version_part_files(con, current_catalog(con))


def remove_unread_parts(published: Path, versions: list[Path]) -> list[Path]:
    """Delete the part files (and staging leftovers) in ``published`` that no version file in
    ``versions`` reads; the parts left are returned. The caller keeps anyone from writing
    parts meanwhile (the publish lock)."""
    read: set[Path] = set()
    for version in versions:
        read.update(published / file for file in read_part_files(version))
    folder = published / PARTS_DIR
    kept = []
    for entry in sorted(folder.iterdir()) if folder.exists() else []:
        if entry in read:
            kept.append(entry)
        else:
            entry.unlink(missing_ok=True)
    return kept


def _search_folder(published: Path) -> str:
    folder = str(published.resolve())
    if "," in folder:  # file_search_path is a comma-separated list
        raise ValueError(f"a published folder's path cannot contain a comma: {folder}")
    return folder
