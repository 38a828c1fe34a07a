"""The dbt project as Dagster assets: each model its own asset, built through dbt's Python API in
the step's process (``dbt_runner.py``). dbt's tests run in ``dbt build`` (a failing one fails the
step, so nothing is published), not as Dagster asset checks."""

import fcntl
import json
from collections.abc import Iterator, Mapping
from graphlib import TopologicalSorter
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DagsterDbtTranslatorSettings, DbtProject, dbt_assets

from findata.orchestration.assets.raw import raw_asset_key
from findata.orchestration.dbt_manifest import (
    TRANSFORMS,
    build_target,
    dbt_environment,
    dbt_variables,
    manifest_dir,
    manifest_is_current,
    project_digest,
)
from findata.orchestration.dbt_runner import BuildResult, parse_project, run_dbt
from findata.orchestration.dbt_scope import DbtScope, plan_dbt_build, record_dbt_build
from findata.orchestration.refresh_lock import REFRESH_LOCK
from findata.settings import get_settings


class FindataTranslator(DagsterDbtTranslator):
    """dbt sources are the raw assets; models are keyed ``[schema, model]``, grouped by layer."""

    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> dg.AssetKey:
        if dbt_resource_props["resource_type"] == "source":
            return raw_asset_key(dbt_resource_props["identifier"])
        return dg.AssetKey([dbt_resource_props["schema"], dbt_resource_props["name"]])

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        return dbt_resource_props.get("schema") or "dbt"


#: the file whose lock one parse of the project holds (beside the manifest)
PARSE_LOCK = ".parse.lock"

# dbt's tests as asset checks would cost ~300 Dagster events a refresh (planned, evaluated,
# carried for the marts left as built), each a commit to the event log: ~1-2 s of a small
# one-day refresh on the SQLite default (docs/benchmarks.md). dbt build runs them all the
# same and stops on a failing one
TRANSLATOR = FindataTranslator(settings=DagsterDbtTranslatorSettings(enable_asset_checks=False))

dbt_environment(get_settings())
dbt_project = DbtProject(
    project_dir=TRANSFORMS,
    profiles_dir=TRANSFORMS,
    target_path=manifest_dir(get_settings()),
)


def prepare_manifest(project: DbtProject) -> None:
    """Parse the project (``dbt parse``) unless the manifest was made from these very files:
    outside ``dagster dev`` nothing else does, and a stale manifest would miss new models."""
    target = project.target_path
    digest = project_digest()
    if manifest_is_current(target, digest):
        return
    target.mkdir(parents=True, exist_ok=True)
    # processes that load the definitions at once on a new home (the UI's webserver and
    # daemon, test workers) parse one after the other: a second parse rewriting manifest.json
    # while the first process reads it gave a half-written file
    with open(target / PARSE_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not manifest_is_current(target, digest):  # parsed by the process we waited for
            parse_project(target, digest)


prepare_manifest(dbt_project)


@dbt_assets(
    manifest=dbt_project.manifest_path,
    project=dbt_project,
    dagster_dbt_translator=TRANSLATOR,
    required_resource_keys={REFRESH_LOCK},
)
def dbt_models(context: dg.AssetExecutionContext) -> Iterator[Any]:
    """``dbt build``: the models downstream of a raw source that changed (every model when the
    code changed or no build is recorded: ``dbt_scope.py``), with their tests."""
    settings = get_settings()
    manifest = json.loads(dbt_project.manifest_path.read_text())
    selection = set(context.selected_asset_keys) != set(context.assets_def.keys)
    scope = plan_dbt_build(settings, manifest, selection=selection)
    context.log.info(
        f"dbt build: {scope.reason}; {len(scope.unchanged_models)} models left as built"
    )
    # first: Dagster takes a multi-asset's outputs in dependency order, and a mart left as built
    # reads no model that is rebuilt (it would read a changed source)
    yield from _unchanged_marts(context, manifest, scope)
    if scope.runs_nothing:
        return
    args = scope.dbt_args()
    if scope.selection:
        args += ["--select", " ".join(_selected_models(context, manifest))]
    target = build_target(settings)
    context.log.info(f"dbt {' '.join(args)} (its full log: {target / 'dbt.log'})")
    result = run_dbt(args, target, dbt_variables(settings))
    yield from _built_models(context, manifest, result)
    if not result.success:
        raise dg.Failure(
            description=_failure_description(result),
            metadata={"dbt_log": str(target / "dbt.log")},
        )
    record_dbt_build(settings, scope)


def _built_models(
    context: dg.AssetExecutionContext, manifest: Mapping[str, Any], result: BuildResult
) -> Iterator[dg.Output[None]]:
    """An output for each model dbt built, in dependency order, with dbt's time and status."""
    built = {n.unique_id: n for n in result.nodes if n.status == "success"}
    for node in _in_dependency_order(manifest, set(built) & set(manifest["nodes"])):
        if node["resource_type"] != "model":
            continue
        key = TRANSLATOR.get_asset_key(node)
        if key not in context.selected_asset_keys:
            continue
        done = built[node["unique_id"]]
        yield dg.Output(
            None,
            output_name=context.assets_def.get_output_name_for_asset_key(key),
            metadata={"rebuilt": True, "seconds": round(done.seconds, 3), "dbt": done.message},
        )


def _selected_models(context: dg.AssetExecutionContext, manifest: Mapping[str, Any]) -> list[str]:
    """The names of the models the run selected (a subset materialised from the UI)."""
    return sorted(
        node["name"]
        for node in manifest["nodes"].values()
        if node["resource_type"] == "model"
        and TRANSLATOR.get_asset_key(node) in context.selected_asset_keys
    )


def _failure_description(result: BuildResult) -> str:
    """What failed in a dbt build: its failing nodes (a test's failures, a model's error), or
    dbt's own error."""
    failed = [n for n in result.nodes if n.status in ("error", "fail", "runtime error")]
    lines = [f"{n.unique_id}: {n.status}: {n.message}" for n in failed]
    if result.error:
        lines.append(result.error)
    return "dbt build failed:\n" + ("\n".join(lines) or "(no node failed; see dbt's log)")


def _unchanged_marts(
    context: dg.AssetExecutionContext, manifest: Mapping[str, Any], scope: DbtScope
) -> Iterator[dg.Output[None]]:
    """An output for each mart dbt left as it was, so that the steps reading it (its contract
    check, publish) run; its metadata says it was not rebuilt. Models inside the dbt project
    need none: nothing outside this step reads them."""
    left = set(scope.unchanged_models)
    unchanged = {
        node["unique_id"]
        for node in manifest["nodes"].values()
        if node["resource_type"] in ("model", "seed", "snapshot") and node["name"] in left
    }
    for node in _in_dependency_order(manifest, unchanged):
        if node["resource_type"] != "model":
            continue
        key = TRANSLATOR.get_asset_key(node)
        if key.path[0] != "marts" or key not in context.selected_asset_keys:
            continue
        yield dg.Output(
            None,
            output_name=context.assets_def.get_output_name_for_asset_key(key),
            metadata={
                "rebuilt": False,
                "why": f"no raw source it reads changed ({scope.reason})",
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
