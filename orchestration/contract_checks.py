"""Data contracts (``contracts/datasets/*.yaml``) as Great Expectations 1.24 suites.

Public API (the implementation lives in ``orchestration/checks/``):

- :func:`build_suite` — a contract as a GE ``ExpectationSuite``. Every expectation comes from
  the contract (``meta.rule`` names the rule):

  ========================  ===============================================================
  contract                  expectation
  ========================  ===============================================================
  columns (ordered)         ``ExpectTableColumnsToMatchOrderedList``
  column types              ``ExpectColumnValuesToBeInTypeList`` (pandas dtypes, see below)
  ``nullable: false``       ``ExpectColumnValuesToNotBeNull``
  key                       ``ExpectCompoundColumnsToBeUnique`` (one column:
                            ``ExpectColumnValuesToBeUnique``); key columns are not nullable,
                            so they also get the not-null expectation
  ``ordered`` chains        ``ExpectColumnPairValuesAToBeGreaterThanB(or_equal=True,
                            ignore_row_if="either_value_is_missing")`` for *every* pair of a
                            chain, so a null in the middle does not hide its neighbours
  ``positive``              ``ExpectColumnValuesToBeBetween(min_value=0, strict_min=True)``
  ``non_negative``          ``ExpectColumnValuesToBeBetween(min_value=0)``
  ``allowed``               ``ExpectColumnValuesToBeInSet``
  ``date_range``            ``ExpectColumnValuesToBeBetween`` with datetime bounds; ``today``
                            is a parameter (callers pass the injectable clock's UTC date)
  ``row_count_min_ratio``   ``ExpectTableRowCountToBeBetween(min_value=ceil(ratio x
                            previous_rows))``; none when there is no previous version
  ``warn`` (row rules)      the same expectations with GE ``severity="warning"``, last in the
                            suite, each described "WARNING, does not stop the publish: ..."
                            in the data docs; a failure is reported, the check's ``success``
                            (the publish gate) counts ``critical`` failures alone
  ========================  ===============================================================

  ``ExpectSelectColumnValuesToBeUniqueWithinRecord`` is not used: it asks that the values
  *within one row* differ from each other, which is not what a compound key means.

- :func:`check_dataset` — validate a pandas frame (the whole mart) and summarise it as a
  :class:`ContractCheckResult` (GE's validation result and suite kept as JSON).
- :func:`run_contract_checks` — every contract whose mart ``<schema>.<name>`` exists in a
  DuckDB file (opened read-only).
- :func:`write_data_docs` — GE's own data docs site (file-based, under the given folder).

Types. A mart reaches GE as the pandas frame DuckDB produces, so each DuckDB type is checked as
the dtypes DuckDB gives it (``PANDAS_DTYPES``: BIGINT -> int64/Int64, DATE -> datetime64, ...).
Two relabellings happen before GE sees a frame, neither changing a value: pandas 3's ``str``
dtype becomes ``string`` (GE 1.24 cannot name ``str`` in a type list), and non-nanosecond
datetimes become ``datetime64[ns]`` (GE compares only those vectorised). A frame cannot tell
DATE from TIMESTAMP or DECIMAL from DOUBLE, so :func:`run_contract_checks` also compares
DuckDB's catalogue types with the contract and reports a mismatch as a
``duckdb_column_type`` failure (exact, outside GE, not in the data docs).

Large marts: measured, and what was chosen. A synthetic prices mart of 13.7 M rows (3,000
securities x 4,567 days, the contract's 18 columns) on this 2-CPU machine:

- whole mart through DuckDB ``.df()`` and GE's pandas engine: reading 74 s (text columns are
  slow to convert), validating 89 s (210 s before the datetime relabelling), peak memory
  11.6 GB. Too slow and too big for a pipeline step.
- GE in DuckDB itself: GE 1.24 validates SQL through SQLAlchemy, and DuckDB has no SQLAlchemy
  dialect here (``duckdb_engine`` is not installed, and was not installed), so
  ``add_sql("duckdb:///...")`` is not available. Not used.
- chosen — exact slices plus a sample (``orchestration/checks/partitioned.py``): a mart above
  ``FULL_CHECK_MAX_ROWS`` (2 M rows) is validated in parts, each a real GE validation of part of
  the same suite. Keys (uniqueness and not-null), every other not-null column and the row count
  are checked on *every* row, one slice of columns at a time (the key columns, then one column
  each); the row-wise value rules (ordered pairs, signs, allowed values, date ranges) and the
  column list and dtypes run on a Bernoulli sample of about ``SAMPLE_ROWS`` (500 k) rows. The
  parts are merged into one validation result in suite order (``meta.rows`` on each result says
  ``all`` or ``sample``). Measured: 38 s, peak 2 GB. A sampled rule misses a defect only if
  none of its rows is drawn: 10 bad rows in 13.7 M are found with probability about 30 %,
  100 with 97 %, 1,000 with certainty for practical purposes. Reading goes through Arrow
  (``frames.read_frame``, 3.5x faster than ``.df()`` for text) in one query per part.
  Marts up to 2 M rows (all of the small demo) are validated whole and exactly.

GE runs in an ephemeral (in-memory) context with usage statistics off
(``GX_ANALYTICS_ENABLED=false``) and progress bars off; ``great_expectations`` is imported
inside the functions that use it (the import takes 3-4 s). Nothing is written except the data
docs under the folder passed to :func:`write_data_docs`.
"""

from __future__ import annotations

from findata.orchestration.checks.data_docs import write_data_docs
from findata.orchestration.checks.results import ContractCheckResult, ContractFailure
from findata.orchestration.checks.suite import PANDAS_DTYPES, build_suite
from findata.orchestration.checks.validate import check_dataset
from findata.orchestration.checks.warehouse import (
    FULL_CHECK_MAX_ROWS,
    SAMPLE_ROWS,
    check_mart,
    run_contract_checks,
)

__all__ = [
    "FULL_CHECK_MAX_ROWS",
    "PANDAS_DTYPES",
    "SAMPLE_ROWS",
    "ContractCheckResult",
    "ContractFailure",
    "build_suite",
    "check_dataset",
    "check_mart",
    "run_contract_checks",
    "write_data_docs",
]
