"""Which dbt models a build runs: those downstream of a raw source that changed, or all of them.

After a successful ``dbt build`` the step records, beside the warehouse
(``build/dbt_built_from.json``), the fingerprint of each raw source it built from (as the raw step
kept them in ``raw._landing_fingerprints``) and of the code and contracts. The next build reads
the raw fingerprints again and runs only the models downstream of a source whose fingerprint
differs; every other model's table is the one that build left, made by the same code from the
same rows (no source changed, after a build that did not get to publish: no model runs). No
record (the first build, a forced one) or other code means every model, and ``--full-refresh``
for the incremental ones.

A test of a model that does not run is not run either (the model's rows are the ones the
build that last ran it tested); a test that also reads a rebuilt model runs (cautious indirect
selection).

The record is replaced only when dbt succeeded. A build that fails or is killed halfway leaves
the one before, which still names every source whose models it may have rebuilt (each model is
one DuckDB transaction: its old table or its new one): the next build runs those models again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from findata.orchestration.build_inputs import code_fingerprint
from findata.settings import Settings
from findata.sources.landing import LANDING_SOURCES
from findata.sources.raw import landing_fingerprints

DBT_BUILT_FROM = "dbt_built_from.json"


@dataclass(frozen=True)
class DbtScope:
    """What one ``dbt build`` runs."""

    #: raw source fingerprints and the code fingerprint this build reads (recorded on success)
    sources: dict[str, str]
    code: str
    #: every model, incremental ones rebuilt whole; why, when so
    full_refresh: bool
    reason: str
    #: landing sources whose rows changed since the last build
    changed_sources: tuple[str, ...] = ()
    #: models left as the last build made them (names, for ``--exclude``)
    unchanged_models: tuple[str, ...] = ()
    #: a selection of models (the UI's "materialize selected"): each selected one runs, and
    #: the build is not recorded (models outside it may still read older rows)
    selection: bool = False

    @property
    def runs_nothing(self) -> bool:
        """Every model is left as the last build made it."""
        return not (self.full_refresh or self.selection or self.changed_sources)

    def dbt_args(self) -> list[str]:
        """``dbt build``'s arguments for this scope (it runs something)."""
        if self.full_refresh:
            return ["build", "--full-refresh"]
        if not self.unchanged_models:
            return ["build"]
        # cautious: a test of a rebuilt model that also reads one left as built (a relationship
        # to an unchanged mart) runs; dbt's default (eager) leaves out every test of an excluded
        # model, and the rebuilt model's rows would go untested against it
        return [
            "build",
            "--exclude",
            " ".join(self.unchanged_models),
            "--indirect-selection",
            "cautious",
        ]


def plan_dbt_build(
    settings: Settings, manifest: Mapping[str, Any], *, selection: bool = False
) -> DbtScope:
    """The scope of the next ``dbt build`` in ``settings``' warehouse (see module doc); of a
    ``selection`` of models, when the run selected some."""
    scope = _plan_whole_build(settings, manifest)
    if not selection:
        return scope
    return DbtScope(
        scope.sources,
        scope.code,
        scope.full_refresh,
        "a selection of models: each of them runs",
        selection=True,
    )


def _plan_whole_build(settings: Settings, manifest: Mapping[str, Any]) -> DbtScope:
    sources = landing_fingerprints(settings.warehouse_path)
    code = code_fingerprint()[0]
    built = _built_from(settings)
    if built is None:
        return DbtScope(sources, code, True, "no successful dbt build recorded")
    if built.get("code") != code:
        return DbtScope(sources, code, True, "the code or contracts changed")
    before = built.get("sources", {})
    changed = tuple(
        sorted(s for s in sources.keys() | before.keys() if sources.get(s) != before.get(s))
    )
    tables = {table for name in changed for table in _source_tables(name)}
    # no source changed (the last build did not publish, or a file landed outside every
    # source): every model is as that build left it
    affected = _downstream_models(manifest, tables)
    unchanged = tuple(
        sorted(
            node["name"]
            for node in manifest["nodes"].values()
            if node["resource_type"] in ("model", "seed", "snapshot")
            and node["unique_id"] not in affected
        )
    )
    return DbtScope(
        sources,
        code,
        False,
        f"only what reads {', '.join(changed)}" if changed else "no raw source changed",
        changed_sources=changed,
        unchanged_models=unchanged,
    )


def forget_dbt_build(settings: Settings) -> None:
    """No build is recorded: the next one runs every model (a forced build)."""
    (settings.build_dir / DBT_BUILT_FROM).unlink(missing_ok=True)


def record_dbt_build(settings: Settings, scope: DbtScope) -> None:
    """``dbt build`` succeeded on ``scope``: every model now reflects its sources and code
    (nothing is recorded after a selection)."""
    if scope.selection:
        return
    settings.build_dir.mkdir(parents=True, exist_ok=True)
    record = settings.build_dir / f"{DBT_BUILT_FROM}.tmp"
    record.write_text(json.dumps({"code": scope.code, "sources": scope.sources}))
    os.replace(record, settings.build_dir / DBT_BUILT_FROM)


def _built_from(settings: Settings) -> dict[str, Any] | None:
    try:
        kept = json.loads((settings.build_dir / DBT_BUILT_FROM).read_text())
    except (OSError, ValueError):
        return None
    return kept if isinstance(kept, dict) else None


def _source_tables(source: str) -> tuple[str, ...]:
    landing = LANDING_SOURCES.get(source)
    return landing.tables if landing is not None else ()


def _downstream_models(manifest: Mapping[str, Any], raw_tables: Iterable[str]) -> set[str]:
    """Unique ids of every node downstream of the dbt sources reading ``raw_tables``."""
    wanted = set(raw_tables)
    frontier = [
        uid for uid, source in manifest["sources"].items() if source["identifier"] in wanted
    ]
    children: Mapping[str, list[str]] = manifest["child_map"]
    seen: set[str] = set()
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in seen:
                seen.add(child)
                frontier.append(child)
    return seen
