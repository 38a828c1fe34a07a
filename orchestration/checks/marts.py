"""A refresh's contract checks of its marts, one after another in the refresh's own process.

Each mart is compared with the comparable published version first: not checked again when its
rows are that version's, else checked on its changed rows or whole (``warehouse.check_mart``).
Great Expectations is imported by the first check (``gx_runtime``), not when the definitions
load.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import duckdb

from findata.contracts.datasets import DatasetContract
from findata.orchestration.checks.results import ContractCheckResult
from findata.orchestration.checks.unchanged import VersionComparison, compare_with_version
from findata.orchestration.checks.warehouse import check_mart


@dataclass(frozen=True)
class MartCheck:
    """One mart to check: ``<schema>.<contract.name>`` in ``warehouse``, compared with the
    ``comparable`` version (``build_inputs.comparable_version``; None: check every row)."""

    contract: DatasetContract
    warehouse: Path
    schema: str
    comparable: tuple[str, Path] | None
    previous_rows: int | None
    today: dt.date


@dataclass(frozen=True)
class MartCheckOutcome:
    """How a mart compared with the version (None: no version to compare with), and its check
    (None: its rows are the version's, which passed this contract: not checked again)."""

    comparison: VersionComparison | None
    result: ContractCheckResult | None


def check_against_version(job: MartCheck) -> MartCheckOutcome:
    """Check ``job``'s mart: not again when its rows are the comparable version's, else on its
    changed rows or whole (``warehouse.check_mart``)."""
    with duckdb.connect(str(job.warehouse), read_only=True) as con:
        comparison = compare_with_version(con, job.schema, job.contract, job.comparable)
        if comparison is not None and comparison.unchanged:
            return MartCheckOutcome(comparison, None)
        result = check_mart(
            con,
            job.schema,
            job.contract,
            today=job.today,
            previous_rows=job.previous_rows,
            compared_with=comparison,
        )
    return MartCheckOutcome(comparison, result)


def check_marts(jobs: list[MartCheck]) -> list[MartCheckOutcome]:
    """Every job's outcome, in order. A check that raises raises here."""
    return [check_against_version(job) for job in jobs]
