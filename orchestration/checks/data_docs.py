"""Great Expectations' own data docs (a file-based HTML site) for contract-check results."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from findata.orchestration.checks.gx_runtime import ephemeral_context, import_gx
from findata.orchestration.checks.results import ContractCheckResult
from findata.orchestration.checks.validate import RUN_NAME

SITE_NAME = "contracts"


def _site_config(out_dir: Path) -> dict[str, Any]:
    return {
        "class_name": "SiteBuilder",
        "show_how_to_buttons": False,
        "store_backend": {
            "class_name": "TupleFilesystemStoreBackend",
            "base_directory": str(out_dir),
        },
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
    }


def write_data_docs(results: Iterable[ContractCheckResult], out_dir: Path) -> Path:
    """Render ``results`` (their suites and validation results) as GE data docs under ``out_dir``.

    An in-memory GE context gets a filesystem data-docs site rooted at ``out_dir``, the suites
    and validation results are put in its stores, and GE builds the site; nothing is written
    elsewhere. Returns the site's ``index.html``.
    """
    gx = import_gx()
    from great_expectations.core.expectation_validation_result import (
        ExpectationSuiteValidationResultSchema,
    )
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
        ValidationResultIdentifier,
    )

    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    context = ephemeral_context()
    context.add_data_docs_site(site_name=SITE_NAME, site_config=_site_config(out_dir))
    suites: set[str] = set()
    schema = ExpectationSuiteValidationResultSchema()
    for result in results:
        suite = {k: v for k, v in result.suite.items() if k != "id"}
        if suite["name"] not in suites:
            suites.add(suite["name"])
            context.suites.add(gx.ExpectationSuite(**suite))
        validation = schema.load(result.validation)
        run = result.validation.get("meta", {}).get("run_id") or {}
        run_time = dt.datetime.fromisoformat(run["run_time"]) if run.get("run_time") else None
        key = ValidationResultIdentifier(
            expectation_suite_identifier=ExpectationSuiteIdentifier(name=suite["name"]),
            run_id=RunIdentifier(run_name=run.get("run_name") or RUN_NAME, run_time=run_time),
            batch_identifier=result.dataset,
        )
        context.validation_results_store.set(key, validation)
    context.build_data_docs(site_names=[SITE_NAME])
    return out_dir / "index.html"
