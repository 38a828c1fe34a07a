"""Data contracts as blocking asset checks on the marts: a failure stops the publish."""

import dagster as dg
import duckdb

from findata.clock import get_clock, utc_today
from findata.contracts.datasets import DatasetContract
from findata.orchestration.build_inputs import comparable_version
from findata.orchestration.checks.results import ContractCheckResult
from findata.orchestration.checks.unchanged import VersionComparison, compare_with_version
from findata.orchestration.checks.warehouse import check_mart
from findata.orchestration.publish import contracts_published
from findata.published import current_version_at
from findata.settings import get_settings


def mart_asset_key(dataset: str) -> dg.AssetKey:
    """The asset key of the mart behind published dataset ``dataset``."""
    return dg.AssetKey(["marts", dataset])


def previous_row_counts() -> dict[str, int]:
    """Rows per dataset in the current published version (empty before the first)."""
    current = current_version_at(get_settings().control_plane_url)
    return dict(current.row_counts) if current is not None else {}


def _changed_rows_checked(result: ContractCheckResult) -> dict[str, object]:
    """How many rows a check of changed rows read, and against which version."""
    if result.method != "changed":
        return {}
    checked = result.validation["meta"]["contract_check"]
    return {"changed_rows": checked["changed_rows"], "compared_with": checked["compared_with"]}


def _from_rebuilt_rows(result: ContractCheckResult, comparison: VersionComparison | None) -> bool:
    """The check compared the rows the mart's incremental build recomputed alone."""
    return result.method == "changed" and comparison is not None and comparison.from_rebuilt_rows


def _contract_check(contract: DatasetContract) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=mart_asset_key(contract.name),
        name="data_contract",
        blocking=True,
        description=f"contracts/datasets/{contract.name}.yaml as a Great Expectations suite.",
    )
    def check(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        settings = get_settings()
        comparable = comparable_version(settings, context.run.run_id)
        with duckdb.connect(str(settings.warehouse_path), read_only=True) as con:
            comparison = compare_with_version(con, "marts", contract, comparable)
            if comparison is not None and comparison.unchanged:
                return dg.AssetCheckResult(
                    passed=True,
                    metadata={
                        "unchanged_since": comparison.label,
                        "checked": f"not again: the rows of {comparison.label}, built by the same "
                        "code and contracts, which passed this contract then",
                    },
                )
            result = check_mart(
                con,
                "marts",
                contract,
                today=utc_today(get_clock()),
                previous_rows=previous_row_counts().get(contract.name),
                compared_with=comparison,
            )
        return dg.AssetCheckResult(
            passed=result.success,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "rows": result.row_count,
                "method": result.method,
                **_changed_rows_checked(result),
                **({"from_rebuilt_rows": True} if _from_rebuilt_rows(result, comparison) else {}),
                "failures": dg.MetadataValue.json(
                    [
                        {
                            "expectation": f.expectation,
                            "columns": list(f.columns),
                            "summary": f.summary,
                            "rule": f.rule,
                        }
                        for f in result.failures
                    ]
                ),
            },
        )

    return check


contract_checks = [_contract_check(c) for c in contracts_published()]
