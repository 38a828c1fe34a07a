"""The dbt project as Dagster assets: each model its own asset, dbt tests as asset checks."""

import contextlib
import fcntl
import json
import shutil
import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from graphlib import TopologicalSorter
from importlib import metadata
from pathlib import Path
from typing import Any

import dagster as dg
from packaging import version

from findata.orchestration.assets.raw import raw_asset_key
from findata.orchestration.checks.workers import start_check_workers
from findata.orchestration.dagster_dbt_lean import (
    DagsterDbtTranslator,
    DbtCliResource,
    DbtProject,
    dbt_assets,
    get_asset_check_key_for_test,
)
from findata.orchestration.dbt_manifest import (
    DBT_EXECUTABLE,
    TRANSFORMS,
    dbt_environment,
    finish_started_parse,
    manifest_dir,
    manifest_is_current,
    project_digest,
    record_parse,
)
from findata.orchestration.dbt_scope import (
    DbtScope,
    plan_dbt_build,
    record_dbt_build,
)
from findata.orchestration.refresh_lock import REFRESH_LOCK
from findata.settings import get_settings

PARTIAL_PARSE = "partial_parse.msgpack"
#: what dbt's output pipe holds unread: a one-day build writes ~120 KiB of JSON lines, twice a
#: pipe's default 64 KiB
OUTPUT_PIPE_BYTES = 1 << 20


class FindataTranslator(DagsterDbtTranslator):
    """dbt sources are the raw assets; models are keyed ``[schema, model]``, grouped by layer."""

    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> dg.AssetKey:
        if dbt_resource_props["resource_type"] == "source":
            return raw_asset_key(dbt_resource_props["identifier"])
        return dg.AssetKey([dbt_resource_props["schema"], dbt_resource_props["name"]])

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        return dbt_resource_props.get("schema") or "dbt"


dbt_environment(get_settings())
dbt_project = DbtProject(
    project_dir=TRANSFORMS,
    profiles_dir=TRANSFORMS,
    target_path=manifest_dir(get_settings()),
)


class FindataDbtCliResource(DbtCliResource):
    """dagster-dbt's resource without its two start-up costs that this project does not use
    (~3 s of every build): it asked the dbt executable for its version (a second dbt process)
    and opened a dbt adapter in this process, which serves only column metadata and row counts
    fetched after a model (``fetch_column_metadata``, ``fetch_row_counts``; not used here)."""

    @cached_property
    def _cli_version(self) -> version.Version:
        # the executable runs this environment's dbt (``dbt_executable`` below: findata-dbt)
        return version.parse(metadata.version("dbt-core"))

    def _initialize_dbt_core_adapter(self, args: Sequence[str]) -> Any:
        return None


dbt_resource = FindataDbtCliResource(project_dir=dbt_project, dbt_executable=str(DBT_EXECUTABLE))


def prepare_manifest(project: DbtProject) -> None:
    """Parse the project (``dbt parse``) unless the manifest was made from these very files:
    outside ``dagster dev`` nothing else does, and a stale manifest would miss new models. A
    parse the refresh started before importing Dagster (``dbt_manifest.start_parse``) is
    waited for instead."""
    target = project.target_path
    if finish_started_parse(target):
        return
    digest = project_digest()
    if manifest_is_current(target, digest):
        return
    # the preparer's own resource looks for dbt on PATH; this one knows the venv's dbt
    dbt_resource.cli(["parse", "--quiet"], target_path=target).wait()
    record_parse(target, digest)


prepare_manifest(dbt_project)


@dbt_assets(
    manifest=dbt_project.manifest_path,
    project=dbt_project,
    dagster_dbt_translator=FindataTranslator(),
    required_resource_keys={"dbt", REFRESH_LOCK},
)
def dbt_models(context: dg.AssetExecutionContext) -> Iterator[Any]:
    """``dbt build``: the models downstream of a raw source that changed (every model when the
    code changed or no build is recorded: ``dbt_scope.py``), with their tests."""
    dbt: DbtCliResource = context.resources.dbt
    settings = get_settings()
    dbt_environment(settings)
    manifest = json.loads(dbt_project.manifest_path.read_text())
    selection = set(context.selected_asset_keys) != set(context.assets_def.keys)
    scope = plan_dbt_build(settings, manifest, selection=selection)
    context.log.info(
        f"dbt build: {scope.reason}; {len(scope.unchanged_models)} models left as built"
    )
    # dbt starts first (its process runs from here on): the unchanged marts' outputs and their
    # carried test results (~0.5 s of events on a one-day refresh) are written meanwhile
    build = (
        None
        if scope.runs_nothing
        else dbt.cli(scope.dbt_args(), context=context, target_path=_build_target())
    )
    if build is not None:
        _widen_output_pipe(build.process)
    try:
        # before dbt's events: Dagster takes a multi-asset's outputs in dependency order, and a
        # mart left as built reads no model that is rebuilt (it would read a changed source)
        yield from _unchanged_marts(context, manifest, scope)
        if build is None:
            return
        # the contract checks' workers import their library (seconds) beside dbt, in their own
        # process, rather than after dbt
        start_check_workers()
    except BaseException:
        if build is not None:
            # the step ends before it reads dbt's output: dbt stops too, as dagster-dbt stops
            # it when a step streaming it is interrupted
            build.process.send_signal(signal.SIGINT)
            build.process.wait(timeout=build.termination_timeout_seconds)
        raise
    yield from build.stream()
    record_dbt_build(settings, scope, build.get_artifact("run_results.json"))


def _unchanged_marts(
    context: dg.AssetExecutionContext, manifest: Mapping[str, Any], scope: DbtScope
) -> Iterator[dg.Output[None] | dg.AssetCheckResult]:
    """An output for each mart dbt left as it was, so that the steps reading it (its contract
    check, publish) run; its metadata says it was not rebuilt. Models inside the dbt project
    need none: nothing outside this step reads them. Then the result of each of its dbt tests
    that reads only models left as built, as the build that last ran it recorded (the rows are
    the ones that build tested): publish waits for these checks, which would otherwise have no
    result in this run."""
    left = set(scope.unchanged_models)
    translator = FindataTranslator()
    marts: set[dg.AssetKey] = set()
    unchanged = {
        node["unique_id"]
        for node in manifest["nodes"].values()
        if node["resource_type"] in ("model", "seed", "snapshot") and node["name"] in left
    }
    for node in _in_dependency_order(manifest, unchanged):
        if node["resource_type"] != "model":
            continue
        key = translator.get_asset_key(node)
        if key.path[0] != "marts" or key not in context.selected_asset_keys:
            continue
        marts.add(key)
        yield dg.Output(
            None,
            output_name=context.assets_def.get_output_name_for_asset_key(key),
            metadata={
                "rebuilt": False,
                "why": f"no raw source it reads changed ({scope.reason})",
            },
        )
    for test, status in sorted(scope.test_statuses.items()):
        node = manifest["nodes"].get(test)
        # a test since removed; one that reads a rebuilt model runs (dbt_scope: cautious)
        if node is None or not set(node["depends_on"]["nodes"]) <= unchanged:
            continue
        check = get_asset_check_key_for_test(manifest, translator, test, dbt_project)
        if check is None or check.asset_key not in marts:
            continue
        if check not in context.selected_asset_check_keys:
            continue
        yield dg.AssetCheckResult(
            asset_key=check.asset_key,
            check_name=check.name,
            passed=status == "pass",
            # as dagster-dbt reports a test it ran (DbtCoreCliEventMessage)
            severity=(
                dg.AssetCheckSeverity.WARN if status == "warn" else dg.AssetCheckSeverity.ERROR
            ),
            metadata={
                "status": status,
                "carried_from_build": "not run again: the model is as the last dbt build that "
                "ran this test left it, and this is that build's result",
            },
        )


def _in_dependency_order(
    manifest: Mapping[str, Any], unique_ids: set[str]
) -> Iterator[Mapping[str, Any]]:
    """The manifest's nodes ``unique_ids``, each after those of them it reads (Dagster takes a
    multi-asset's outputs in dependency order: ``metrics`` after ``fundamentals`` when both are
    left as built). The manifest's own order is not one: a partial parse appends the nodes it
    parsed again."""
    nodes = manifest["nodes"]
    graph = {
        unique_id: sorted(set(nodes[unique_id]["depends_on"]["nodes"]) & unique_ids)
        for unique_id in sorted(unique_ids)
    }
    for unique_id in TopologicalSorter(graph).static_order():
        yield nodes[unique_id]


def _widen_output_pipe(process: subprocess.Popen[bytes]) -> None:
    """Let dbt write its whole output before this step reads it: the step yields the marts left
    as built (~0.5 s on a one-day refresh) before it streams dbt's events, and a slow moment
    there (the contract checks' library imported here, as the step once did: seconds) stopped
    dbt at its first write to a full pipe. Linux only (elsewhere, and above the system's pipe
    limit, the pipe keeps its size)."""
    if process.stdout is None or not hasattr(fcntl, "F_SETPIPE_SZ"):
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(process.stdout.fileno(), fcntl.F_SETPIPE_SZ, OUTPUT_PIPE_BYTES)


def _build_target() -> Path:
    """One target folder for every build (dagster-dbt's default is a new one per run): dbt
    reads its previous ``partial_parse.msgpack`` there and parses only what changed (~2 s of a
    refresh otherwise); the first build starts from the one ``dbt parse`` left. Refreshes do
    not overlap (they write the one build warehouse), so neither do their targets."""
    target = get_settings().dbt_target_dir / "build"
    parsed = dbt_project.target_path / PARTIAL_PARSE
    if not (target / PARTIAL_PARSE).exists() and parsed.exists():
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(parsed, target / PARTIAL_PARSE)
    return target
