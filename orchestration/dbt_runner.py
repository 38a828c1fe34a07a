"""dbt run through its Python API (``dbtRunner``) in the refresh's own process.

dagster-dbt's ``DbtCliResource`` starts a ``dbt --version`` process and opens a dbt adapter in
the calling process before every command, then runs the command as a process of its own that
imports dbt again: ~3 s of a one-day refresh whose models take ~3 s, which only overriding its
private methods could skip. dbt's own Python API runs the same command in this process instead,
with dbt imported once. dbt prints its console lines on this process's stdout (``findata
refresh`` sends them to stderr or its JSON log; a run the UI launched keeps them in its captured
output) and its full log (debug lines, the SQL it ran) to ``dbt.log`` beside the command's
artifacts.

dbt's invocations are not thread-safe: a process runs one at a time (a refresh's steps run one
after another). Nothing here imports Dagster.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from findata.orchestration.dbt_manifest import TRANSFORMS, record_parse


@dataclass(frozen=True)
class NodeResult:
    """One model's or test's outcome in a build, as dbt's ``run_results.json`` gives it."""

    unique_id: str
    status: str
    message: str | None
    seconds: float


@dataclass(frozen=True)
class BuildResult:
    """A command's outcome: whether dbt succeeded, and each node's result."""

    success: bool
    nodes: list[NodeResult]
    #: dbt's exception, when it failed before running nodes (a bad project, a locked warehouse)
    error: str | None


def parse_project(target: Path, digest: str) -> None:
    """``dbt parse`` into ``target`` in this process's environment (``dbt_environment``),
    stamped with the project files' ``digest``; quiet."""
    result = run_dbt(["parse", "--quiet"], target, {})
    if not result.success:
        raise RuntimeError(f"dbt parse failed: {result.error}")
    record_parse(target, digest)


def run_dbt(args: list[str], target: Path, environment: dict[str, str]) -> BuildResult:
    """Run the dbt command ``args`` (``build …``) with ``environment``, its artifacts and log in
    ``target``."""
    from dbt.cli.main import dbtRunner

    os.environ.update(environment)
    run_results_path = target / "run_results.json"
    run_results_path.unlink(missing_ok=True)  # a failed start writes none: not the last one's
    result = dbtRunner().invoke(
        [
            *args,
            "--no-use-colors",
            "--project-dir",
            str(TRANSFORMS),
            "--profiles-dir",
            str(TRANSFORMS),
            "--target-path",
            str(target),
            "--log-path",
            str(target),
        ]
    )
    run_results = json.loads(run_results_path.read_text()) if run_results_path.exists() else {}
    nodes = [
        NodeResult(r["unique_id"], r["status"], r.get("message"), r.get("execution_time", 0.0))
        for r in run_results.get("results", [])
    ]
    error = None
    if result.exception is not None:
        error = f"{type(result.exception).__name__}: {result.exception}"
    return BuildResult(result.success, nodes, error)
