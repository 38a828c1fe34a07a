"""A local replica: findata's tables in a DuckDB file, kept current by the change feed.

``Replica(path, datasets=[...]).sync()`` pulls every row of the chosen datasets once, then on each
call applies the change records written since (spec, "Change feed"): per record it deletes the
stored rows of the record's entity from ``start`` to ``end`` and stores the rows the API now serves
for that range (the record's ``url``, or the same range asked by entity when ``url`` is null); an
index record replaces that index's roster. A 410 ``cursor_expired`` (the replica was away longer
than the 90 days the feed keeps) pulls everything again and continues from the newest record.

Crash safety: every record is applied in ONE DuckDB transaction together with the cursor it
reaches, and the rows are fetched before the transaction opens, so a process killed at any point
(even SIGKILL) leaves either the record applied and the cursor past it, or neither: the next
``sync()`` resumes without losing or duplicating a row. A full pull stores each entity's rows in a
staging table in one transaction with a mark that the entity is done (a killed pull resumes where
it stopped) and swaps the staging tables in, with the cursor, in one last transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from findata_client.endpoints import EndpointInfo, Field
from findata_client.errors import BadRequestError, CursorExpiredError, NotFoundError
from findata_client.frames import to_arrow
from findata_client.spec import ENDPOINTS

if TYPE_CHECKING:
    import duckdb

    from findata_client.client import Client


@dataclass(frozen=True)
class ReplicaDataset:
    """How one replicated table mirrors the API.

    ``records`` names the change-feed datasets whose records touch the table; ``entity_column``
    and ``date_column`` are the table's columns a record's entity and its ``start``/``end``
    select (the same columns the endpoint filters ``entity_id`` and ``start``/``end`` on);
    ``params`` are added to every pull (the replica keeps the fullest point-in-time view).
    """

    name: str
    endpoint: str
    records: tuple[str, ...]
    entities: str  # "security" or "issuer": which entities a full pull asks for
    entity_column: str
    date_column: str
    params: tuple[tuple[str, str], ...] = ()


#: what a replica can hold, by the name passed in ``datasets``
DATASETS: dict[str, ReplicaDataset] = {
    d.name: d
    for d in (
        ReplicaDataset("prices", "prices", ("prices",), "security", "entity_id", "date"),
        # every filing of every period (known_from, superseded_on): point-in-time history
        ReplicaDataset(
            "fundamentals", "fundamentals", ("fundamentals",), "issuer", "entity_id",
            "period_end", (("view", "as_reported"),),
        ),
        ReplicaDataset(
            "metrics", "metrics", ("metrics",), "issuer", "issuer_entity_id", "period_end"
        ),
        ReplicaDataset(
            "insiders", "insiders", ("insider_transactions",), "issuer", "entity_id",
            "transaction_date",
            (("include_amendments", "true"), ("include_derivatives", "true"),
             ("include_uncoded", "true")),
        ),
    )
}  # fmt: skip

#: the index tables: the current roster of each index kept, and its additions and removals
INDEX = "index"
INDEX_RECORDS = ("index_membership", "index_events")
INDEX_TABLES = ("index_members", "index_events")
#: a roster row's ticker is the member's ticker today: a ticker change re-pulls the rosters
ROSTER_TICKER_RECORDS = ("ticker_history",)

#: an index's current roster and its events, as the API serves them
Roster = tuple[list[dict[str, Any]], list[dict[str, Any]]]

STATE = "_replica_state"
PULLED = "_replica_pulled"


@dataclass
class SyncReport:
    """What one ``sync()`` did."""

    full_pull: bool = False
    records_applied: int = 0
    records_skipped: int = 0
    rows_deleted: int = 0
    rows_stored: int = 0
    cursor: str | None = None
    tables: dict[str, int] = field(default_factory=dict)


class Replica:
    """A DuckDB file holding ``datasets`` (names of :data:`DATASETS`, and ``"index"``), kept
    current from ``/v1/changes`` by :meth:`sync` (a Max or Redistribution key reads the feed).

    ``indexes``: the index codes whose rosters and events to keep (default: every index the
    service lists). The client is made from the environment (``FINDATA_API_KEY``,
    ``FINDATA_BASE_URL``) unless one is passed.
    """

    def __init__(
        self,
        path: str | Path,
        datasets: Sequence[str] = ("prices", "fundamentals", "metrics", "insiders", INDEX),
        *,
        client: Client | None = None,
        indexes: Sequence[str] | None = None,
    ) -> None:
        unknown = set(datasets) - {*DATASETS, INDEX}
        if unknown:
            raise ValueError(
                f"unknown datasets {sorted(unknown)}; a replica holds {[*DATASETS, INDEX]}"
            )
        self.path = Path(path)
        self.datasets = [DATASETS[d] for d in datasets if d in DATASETS]
        self.keeps_indexes = INDEX in datasets
        self.index_codes = [i.lower() for i in indexes] if indexes is not None else None
        self._listed_indexes: list[str] | None = None
        if client is None:
            from findata_client.client import Client

            client = Client()
        self.client = client

    # -- the public steps --------------------------------------------------------------------

    def sync(self) -> SyncReport:
        """Bring the file up to the newest change record: a full pull first when the file is new
        (or a previous pull was interrupted, or the feed expired our cursor), then every record
        after the stored cursor, each in its own transaction."""
        report = SyncReport()
        self._listed_indexes = None  # asked again once per sync: an index may be new
        with self.connect(read_only=False) as con:
            self._create_tables(con)
            if self._state(con, "holds") != self._holds:
                # new, or asked to hold other tables than it does: start over, without the
                # tables it no longer keeps current
                con.begin()
                for table in {*DATASETS, *INDEX_TABLES} - set(self.tables):
                    con.execute(f'DROP TABLE IF EXISTS "{table}"')
                    con.execute(f'DROP TABLE IF EXISTS "_pull_{table}"')
                self._set_state(con, {"holds": self._holds, "cursor": None, "pull_target": None})
                con.commit()
            if self._state(con, "cursor") is None or self._state(con, "pull_target") is not None:
                self._full_pull(con, report)
            while True:
                try:
                    more = self._apply_page(con, report)
                except CursorExpiredError:
                    self._commit_state(con, {"pull_target": None, "cursor": None})
                    self._full_pull(con, report)
                    continue
                if not more:
                    break
            report.cursor = self._state(con, "cursor")
            report.tables = {
                table: con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
                for table in self.tables
            }
        return report

    @property
    def tables(self) -> list[str]:
        """The data tables of the file."""
        return [d.name for d in self.datasets] + (list(INDEX_TABLES) if self.keeps_indexes else [])

    @contextmanager
    def connect(self, *, read_only: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
        """A DuckDB connection to the file (read-only by default) for queries between syncs."""
        import duckdb

        con = duckdb.connect(str(self.path), read_only=read_only)
        try:
            yield con
        finally:
            con.close()

    # -- state -------------------------------------------------------------------------------

    @property
    def _holds(self) -> str:
        """What the file holds, as stored beside the cursor."""
        indexes = ",".join(sorted(self.index_codes)) if self.index_codes is not None else "*"
        return f"{','.join(self.tables)};indexes={indexes}"

    @staticmethod
    def _state(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
        row = con.execute(f"SELECT value FROM {STATE} WHERE key = ?", [key]).fetchone()
        return row[0] if row else None

    @staticmethod
    def _set_state(con: duckdb.DuckDBPyConnection, values: dict[str, str | None]) -> None:
        for key, value in values.items():
            con.execute(f"DELETE FROM {STATE} WHERE key = ?", [key])
            if value is not None:
                con.execute(f"INSERT INTO {STATE} VALUES (?, ?)", [key, value])

    def _commit_state(self, con: duckdb.DuckDBPyConnection, values: dict[str, str | None]) -> None:
        con.begin()
        self._set_state(con, values)
        con.commit()

    def _create_tables(self, con: duckdb.DuckDBPyConnection) -> None:
        con.execute(f"CREATE TABLE IF NOT EXISTS {STATE} (key VARCHAR PRIMARY KEY, value VARCHAR)")
        con.execute(
            f"CREATE TABLE IF NOT EXISTS {PULLED} (dataset VARCHAR, entity VARCHAR, "
            "PRIMARY KEY (dataset, entity))"
        )
        for table, endpoint, extra in self._table_shapes():
            for name in (table, f"_pull_{table}"):
                con.execute(
                    f'CREATE TABLE IF NOT EXISTS "{name}" ({_columns_sql(endpoint, extra)})'
                )

    def _table_shapes(self) -> list[tuple[str, EndpointInfo, tuple[str, ...]]]:
        shapes = [(d.name, ENDPOINTS[d.endpoint], ()) for d in self.datasets]
        if self.keeps_indexes:
            # a roster row does not name its index: the table adds it
            shapes += [
                ("index_members", ENDPOINTS["index"], ("index",)),
                ("index_events", ENDPOINTS["index_events"], ()),
            ]
        return shapes

    # -- the full pull -----------------------------------------------------------------------

    def _full_pull(self, con: duckdb.DuckDBPyConnection, report: SyncReport) -> None:
        """Every row of every table into the staging tables, entity by entity (resumable), then
        one transaction swaps them in and sets the cursor to the newest record before the pull
        began (records written meanwhile are applied after: applying one twice is harmless)."""
        report.full_pull = True
        if self._state(con, "pull_target") is None:
            latest = self.client.get("/v1/changes", {"limit": 1})["meta"]["latest_cursor"]
            con.begin()
            con.execute(f"DELETE FROM {PULLED}")
            for table in self.tables:
                con.execute(f'DELETE FROM "_pull_{table}"')
            self._set_state(con, {"pull_target": latest})
            con.commit()
        done = set(con.execute(f"SELECT dataset, entity FROM {PULLED}").fetchall())
        securities, issuers = self._entities()
        for dataset in self.datasets:
            ids = securities if dataset.entities == "security" else issuers
            for entity in ids:
                if (dataset.name, entity) in done:
                    continue
                rows = self._pull(dataset, entity, None, None)
                con.begin()
                report.rows_stored += self._insert(con, f"_pull_{dataset.name}", dataset, rows)
                con.execute(f"INSERT INTO {PULLED} VALUES (?, ?)", [dataset.name, entity])
                con.commit()
        if self.keeps_indexes:
            for code in self._index_codes():
                if (INDEX, code) in done:
                    continue
                members, events = self._pull_index(code)
                con.begin()
                report.rows_stored += self._store_index(con, "_pull_", code, members, events)
                con.execute(f"INSERT INTO {PULLED} VALUES (?, ?)", [INDEX, code])
                con.commit()
        con.begin()
        for table in self.tables:
            con.execute(f'DELETE FROM "{table}"')
            con.execute(f'INSERT INTO "{table}" SELECT * FROM "_pull_{table}"')
            con.execute(f'DELETE FROM "_pull_{table}"')
        con.execute(f"DELETE FROM {PULLED}")
        self._set_state(con, {"cursor": self._state(con, "pull_target"), "pull_target": None})
        con.commit()

    def _entities(self) -> tuple[list[str], list[str]]:
        """Every security and every issuer the service lists (search without ``q``)."""
        securities, issuers = [], []
        for row in self.client.paginate("/v1/search", {"limit": ENDPOINTS["search"].max_limit}):
            grain = securities if row["entity_grain"] == "security" else issuers
            grain.append(str(row["entity_id"]))
        return sorted(set(securities), key=int), sorted(set(issuers), key=int)

    def _index_codes(self) -> list[str]:
        """The indexes kept: those asked for, else every index the service lists (the 400 of an
        unknown index names them: the API's only list of its indexes)."""
        if self.index_codes is not None:
            return self.index_codes
        if self._listed_indexes is None:
            try:
                self.client.get("/v1/index/_")
            except BadRequestError as error:
                listed = error.detail.partition("Available:")[2]
                self._listed_indexes = [c.strip().lower() for c in listed.split(",") if c.strip()]
            else:
                raise RuntimeError("the service did not list its indexes")
        return self._listed_indexes

    # -- the change feed ---------------------------------------------------------------------

    def _apply_page(self, con: duckdb.DuckDBPyConnection, report: SyncReport) -> bool:
        """Apply one page of records after the cursor; True while the feed has more."""
        cursor = self._state(con, "cursor")
        assert cursor is not None
        body = self.client.get("/v1/changes", {"since": cursor, "limit": 1000})
        skipped_to = None
        rosters: dict[str, Roster] = {}  # pulled for this page's ticker records, once
        for record in body["data"]:
            if not self._apply(con, record, report, rosters):
                report.records_skipped += 1
                skipped_to = record["id"]
            else:
                report.records_applied += 1
                skipped_to = None
        if skipped_to is not None:
            # trailing records this replica does not hold: the cursor moves past them too
            self._commit_state(con, {"cursor": skipped_to})
        return bool(body["meta"]["has_more"])

    def _apply(
        self,
        con: duckdb.DuckDBPyConnection,
        record: dict[str, Any],
        report: SyncReport,
        rosters: dict[str, Roster],
    ) -> bool:
        """Apply one record in one transaction with the cursor it reaches; False when the
        replica holds nothing it touches."""
        kind = record["dataset"]
        if self.keeps_indexes and (kind in INDEX_RECORDS or kind in ROSTER_TICKER_RECORDS):
            if kind in INDEX_RECORDS:
                code = record["entity"].lower()
                if self.index_codes is not None and code not in self.index_codes:
                    return False
                rosters[code] = self._pull_index(code)
                codes = [code]
            else:
                codes = self._index_codes()
                for code in codes:
                    if code not in rosters:
                        rosters[code] = self._pull_index(code)
            con.begin()
            for code in codes:
                members, events = rosters[code]
                report.rows_deleted += self._delete_index(con, "", code)
                report.rows_stored += self._store_index(con, "", code, members, events)
            self._set_state(con, {"cursor": record["id"]})
            con.commit()
            return True
        dataset = next((d for d in self.datasets if kind in d.records), None)
        if dataset is None or not record["entity"]:
            # a row naming no entity (e.g. an unmapped issuer) is not served by entity
            return False
        start, end = record["start"], record["end"]
        rows = self._pull(dataset, record["entity"], start, end, record["url"])
        con.begin()
        deleted = con.execute(
            f'DELETE FROM "{dataset.name}" WHERE "{dataset.entity_column}" = ?'
            + (f' AND "{dataset.date_column}" >= ?' if start else "")
            + (f' AND "{dataset.date_column}" <= ?' if end else ""),
            [int(record["entity"]), *([start] if start else []), *([end] if end else [])],
        ).fetchone()
        report.rows_deleted += deleted[0] if deleted else 0
        report.rows_stored += self._insert(con, dataset.name, dataset, rows)
        self._set_state(con, {"cursor": record["id"]})
        con.commit()
        return True

    # -- pulling and storing -----------------------------------------------------------------

    def _pull(
        self,
        dataset: ReplicaDataset,
        entity: str,
        start: str | None,
        end: str | None,
        url: str | None = None,
    ) -> list[dict[str, Any]]:
        """The rows the API serves for one entity from ``start`` to ``end`` (the record's url
        when it has one, with the replica's own view parameters added)."""
        endpoint = ENDPOINTS[dataset.endpoint]
        if url:
            path, query = _split(url)
        else:
            path = next(p for p in endpoint.paths if "{" not in p)  # the ?entity_id= form
            query = {"entity_id": entity, "start": start or "", "end": end or ""}
        params = {**query, **dict(dataset.params), "limit": str(endpoint.max_limit)}
        rows = self._all_pages(path, params)
        # the endpoint answers at the entity's grain; keep only the record's entity
        return [r for r in rows if str(r[dataset.entity_column]) == entity]

    def _all_pages(self, path: str, params: dict[str, str]) -> list[dict[str, Any]]:
        """Every row of a query; none when the entity is gone (404). A walk whose version
        stopped being served between two pages (a cursor pins its version) starts again."""
        for _attempt in range(3):
            try:
                return self.client.paginate(path, params).to_list()
            except NotFoundError:
                return []
            except BadRequestError as error:
                if not error.detail.startswith("Invalid cursor"):
                    raise
        raise RuntimeError(f"{path}: the served version changed during three walks")

    def _pull_index(self, code: str) -> Roster:
        """One index's current roster and all its events."""
        limit = {"limit": str(ENDPOINTS["index"].max_limit)}
        members = self.client.paginate(f"/v1/index/{code}", limit).to_list()
        events = self.client.paginate(f"/v1/index/{code}/events", limit).to_list()
        return members, events

    def _insert(
        self,
        con: duckdb.DuckDBPyConnection,
        table: str,
        dataset: ReplicaDataset,
        rows: list[dict[str, Any]],
    ) -> int:
        return _insert_rows(con, table, ENDPOINTS[dataset.endpoint], rows)

    @staticmethod
    def _delete_index(con: duckdb.DuckDBPyConnection, prefix: str, code: str) -> int:
        deleted = 0
        for table in ("index_members", "index_events"):
            row = con.execute(
                f'DELETE FROM "{prefix}{table}" WHERE upper("index") = ?', [code.upper()]
            ).fetchone()
            deleted += row[0] if row else 0
        return deleted

    @staticmethod
    def _store_index(
        con: duckdb.DuckDBPyConnection,
        prefix: str,
        code: str,
        members: list[dict[str, Any]],
        events: list[dict[str, Any]],
    ) -> int:
        rows = [{**m, "index": code.upper()} for m in members]
        stored = _insert_rows(con, f"{prefix}index_members", ENDPOINTS["index"], rows, ("index",))
        return stored + _insert_rows(
            con, f"{prefix}index_events", ENDPOINTS["index_events"], events
        )


def _split(url: str) -> tuple[str, dict[str, str]]:
    """A record url's path and query parameters (empty values kept: an open end)."""
    parts = urlsplit(url)
    return parts.path, dict(parse_qsl(parts.query, keep_blank_values=True))


def _columns_sql(endpoint: EndpointInfo, extra: Iterable[str] = ()) -> str:
    """The table's columns: the endpoint's fields with their contract types."""
    columns = [f'"{f.name}" {f.type or "VARCHAR"}' for f in endpoint.fields]
    return ", ".join([*columns, *(f'"{name}" VARCHAR' for name in extra)])


def _insert_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    endpoint: EndpointInfo,
    rows: list[dict[str, Any]],
    extra: Sequence[str] = (),
) -> int:
    """Insert API rows into ``table`` by column name, typed by the endpoint's contract."""
    if not rows:
        return 0
    fields = (*endpoint.fields, *(Field(name, "VARCHAR") for name in extra))
    batch = to_arrow(rows, fields)
    con.register("_replica_rows", batch)
    try:
        con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM _replica_rows')
    finally:
        con.unregister("_replica_rows")
    return len(rows)
