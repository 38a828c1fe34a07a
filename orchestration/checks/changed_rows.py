"""Checking what a build changed: the row rules on the changed rows, the table rules whole.

A refresh that rebuilt a mart from a few new bars compares it with the current published version
(``build_inputs.comparable_version``: built by the same code and contracts, from the build before
this one). The rows it does not hold are the changed rows. The contract is checked as:

- every rule about one row (column list, types, nulls, order, signs, allowed values, dates) on
  the changed rows, with every row that shares a key with one of them: the key rule on the same
  frame (a key can only be duplicated by a row that changed, since the version's keys were
  unique);
- the row-count rule on the whole table (a frame of its row count, no columns).

Sound for the same reason as ``unchanged.py``: every other row is a row of that version, which
passed this very contract, and no rule can turn on a row that did not change (the day bound of
``max: today`` rules only moves later). A forced build, the first one, or one after a failed or
other-code build checks every row (``warehouse.check_mart``), as ``findata contracts check
--full`` does.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import pandas as pd

from findata.clock import get_clock
from findata.contracts.datasets import DatasetContract
from findata.orchestration.checks.frames import quote, read_frame
from findata.orchestration.checks.partitioned import Slice, result_of_parts, validate_slice
from findata.orchestration.checks.results import ContractCheckResult
from findata.orchestration.checks.suite import build_suite
from findata.orchestration.checks.unchanged import VersionComparison
from findata.published.versions import attach_version, detach_version

TABLE_RULES = frozenset({"row_count_min_ratio"})
"""Rules about the whole table, checked on its row count."""


def changed_rows_sql(
    relation: str, served: str, contract: DatasetContract, scope: str = "true"
) -> str:
    """The rows of ``relation`` not in ``served`` (a published table), and every row of
    ``relation`` sharing a key (nulls equal) with one of them. Only the rows in ``scope`` (a
    condition) are compared: the rows outside it must be the same on both sides.

    Rows are compared by key and a 64-bit hash of every column (as the version fingerprints
    are), not column by column: the set difference of the large demo's 15 M full price rows
    held ~7 GiB; of keys and hashes, a fraction of that."""
    key = ", ".join(quote(k) for k in contract.key)
    row_hash = f"hash({', '.join(quote(c) for c in contract.column_names)})"
    same_key = " AND ".join(f"m.{quote(k)} IS NOT DISTINCT FROM c.{quote(k)}" for k in contract.key)
    return (
        f"WITH changed AS (SELECT {key}, {row_hash} FROM {relation} WHERE {scope} "
        f"EXCEPT ALL SELECT {key}, {row_hash} FROM {served} WHERE {scope}) "
        f"SELECT m.* FROM {relation} m WHERE EXISTS (SELECT 1 FROM changed c WHERE {same_key})"
    )


def check_changed_rows(
    con: duckdb.DuckDBPyConnection,
    schema: str,
    contract: DatasetContract,
    comparison: VersionComparison,
    *,
    today: dt.date,
    previous_rows: int | None,
) -> ContractCheckResult:
    """Check ``<schema>.<contract.name>`` where it differs from the version it was compared
    with (``unchanged.compare_with_version``); see the module doc."""
    relation = f"{quote(schema)}.{quote(contract.name)}"
    ((row_count,),) = con.execute(f"SELECT count(*) FROM {relation}").fetchall()
    label = comparison.label
    attach_version(con, comparison.file, "served")
    try:
        served = f"served.main.{quote(contract.name)}"
        frame = read_frame(con, changed_rows_sql(relation, served, contract, comparison.scope))
    finally:
        detach_version(con, "served")
    suite = build_suite(contract, today=today, previous_rows=previous_rows).to_json_dict()
    expectations = suite["expectations"]
    table = tuple(e for e in expectations if (e.get("meta") or {}).get("rule") in TABLE_RULES)
    rows = tuple(e for e in expectations if e not in table)
    run_time = get_clock().now()
    changed = Slice("changed", tuple(contract.column_names), "changed", rows)
    parts = [(changed, validate_slice(frame, contract, changed, run_time))]
    if table:
        whole = Slice("row_count", (), "all", table)
        count_only = pd.DataFrame(index=pd.RangeIndex(row_count))
        parts.append((whole, validate_slice(count_only, contract, whole, run_time)))
    info = {
        "method": "changed",
        "row_count": row_count,
        "changed_rows": len(frame),
        "compared_with": label,
    }
    return result_of_parts(
        contract,
        suite,
        parts,
        info,
        f"{schema}.{contract.name}: the {len(frame):,} rows not in version {label} (with the "
        f"rows sharing their keys); the row count of all {row_count:,}",
    )
