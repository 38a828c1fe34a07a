"""Data contracts as blocking asset checks on the marts: a failure stops the publish; a
warning-level rule that fails gives a WARN result, which does not (Dagster stops what depends on
a blocking check only when it fails with ERROR severity)."""

from collections.abc import Iterator

import dagster as dg

from findata.clock import get_clock, utc_today
from findata.contracts.datasets import DatasetContract
from findata.orchestration.build_inputs import comparable_version
from findata.orchestration.checks.marts import MartCheck, MartCheckOutcome, check_marts
from findata.orchestration.checks.results import ContractCheckResult
from findata.orchestration.checks.unchanged import VersionComparison
from findata.orchestration.refresh_lock import REFRESH_LOCK
from findata.published.publish import contracts_published
from findata.published.versions import current_version_at
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


def _contract_checks() -> dg.AssetChecksDefinition:
    """Every dataset's contract check, run in one step on one warehouse connection (a refresh
    that changed a mart or two paid a Dagster step of 60-70 ms for each mart left as built);
    each check still has its own key, result and blocking gate."""
    contracts = {mart_asset_key(c.name): c for c in contracts_published()}

    @dg.multi_asset_check(
        name="data_contracts",
        specs=[
            dg.AssetCheckSpec(
                "data_contract",
                asset=key,
                blocking=True,
                description=f"contracts/datasets/{contract.name}.yaml as a Great Expectations "
                "suite.",
            )
            for key, contract in contracts.items()
        ],
        can_subset=True,
        required_resource_keys={REFRESH_LOCK},
    )
    def data_contracts(context: dg.AssetCheckExecutionContext) -> Iterator[dg.AssetCheckResult]:
        settings = get_settings()
        comparable = comparable_version(settings, context.run.run_id)
        previous = previous_row_counts()
        today = utc_today(get_clock())
        selected = sorted(context.selected_asset_check_keys, key=lambda k: k.to_user_string())
        jobs = [
            MartCheck(
                contract=contract,
                warehouse=settings.warehouse_path,
                schema="marts",
                comparable=comparable,
                previous_rows=previous.get(contract.name),
                today=today,
            )
            for contract in (contracts[key.asset_key] for key in selected)
        ]
        for job, outcome in zip(jobs, check_marts(jobs), strict=True):
            yield _contract_check_result(job.contract, outcome)

    return data_contracts


def _contract_check_result(
    contract: DatasetContract, outcome: MartCheckOutcome
) -> dg.AssetCheckResult:
    """The contract check of ``contract``'s mart: not run again when its rows are the
    comparable version's, else run on its changed rows or whole (``checks/``)."""
    key = mart_asset_key(contract.name)
    comparison, result = outcome.comparison, outcome.result
    if result is None:
        assert comparison is not None
        return dg.AssetCheckResult(
            asset_key=key,
            check_name="data_contract",
            passed=True,
            metadata={
                "unchanged_since": comparison.label,
                "checked": f"not again: the rows of {comparison.label}, built by the same "
                "code and contracts, which passed this contract then (any warnings were "
                "reported by the run that checked them)",
            },
        )
    return dg.AssetCheckResult(
        asset_key=key,
        check_name="data_contract",
        passed=not result.failures,
        severity=dg.AssetCheckSeverity.ERROR if not result.success else dg.AssetCheckSeverity.WARN,
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
                        "severity": f.severity,
                    }
                    for f in result.failures
                ]
            ),
        },
    )


contract_checks = [_contract_checks()]
