"""The dbt project's manifest (``dbt parse``), started before the Dagster definitions need it.

The definitions make an asset of every dbt model from ``manifest.json``. A home's first
refresh, and the first after the dbt project changed, has no current manifest, and ``dbt parse``
takes ~4-5 s. It runs in a subprocess, so a refresh starts it (:func:`start_parse`) before it
imports Dagster and the definitions (~3-4 s in this process) and the definitions wait for it
(:func:`finish_started_parse`): the two use both cores instead of one after the other. The
command and environment are those dagster-dbt's resource gives a parse, so the build finds the
same partial-parse state (``partial_parse.msgpack``) as when the definitions parse themselves.

Nothing here imports Dagster or dbt: it runs before they are imported.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from findata.orchestration.warm_dbt import CLIENT
from findata.settings import Settings

# the dbt project travels with the package (``findata.transforms``: transforms/ in a checkout)
TRANSFORMS = Path(str(resources.files("findata.transforms")))
#: what runs dbt: ``findata-dbt``, which runs it in the refresh's warm dbt server when there is
#: one (``warm_dbt.py``), else execs ``dbt``
DBT_EXECUTABLE = CLIENT
#: the files of the project that shape its manifest
PROJECT_PARTS = ("models", "macros", "tests", "dbt_project.yml", "profiles.yml")
#: beside the manifest: the hash of the project files it was made from
STAMP = "findata-project.sha256"


@dataclass(frozen=True)
class StartedParse:
    """A ``dbt parse`` under way into ``target``, of the project files hashed ``digest``."""

    process: subprocess.Popen[bytes]
    target: Path
    digest: str


_started: dict[Path, StartedParse] = {}


def dbt_environment(settings: Settings) -> None:
    """Point dbt's profile at ``settings``' build warehouse (its memory limit, its threads), and its
    artifacts and logs at the home's build folder (the project folder may be a read-only
    installed package)."""
    os.environ["FINDATA_WAREHOUSE"] = str(settings.warehouse_path)
    os.environ["FINDATA_BUILD_MEMORY_LIMIT"] = settings.build_memory_limit
    os.environ["FINDATA_BUILD_WORKERS"] = str(settings.build_workers)
    os.environ["DBT_TARGET_PATH"] = str(settings.dbt_target_dir)
    os.environ["DBT_LOG_PATH"] = str(settings.dbt_target_dir / "logs")
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "0")


def manifest_dir(settings: Settings) -> Path:
    """Where ``settings``' home keeps the parsed project (``manifest.json`` and its stamp)."""
    return settings.dbt_target_dir / "manifest"


def project_digest() -> str:
    """A hash of every file of the dbt project that shapes its manifest."""
    digest = hashlib.sha256()
    for path in sorted(TRANSFORMS.rglob("*")):
        relative = path.relative_to(TRANSFORMS)
        if path.is_file() and relative.parts[0] in PROJECT_PARTS:
            digest.update(str(relative).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def manifest_is_current(target: Path, digest: str) -> bool:
    """``target`` holds a manifest made from the project files hashed ``digest``."""
    stamp = target / STAMP
    return (target / "manifest.json").exists() and stamp.exists() and stamp.read_text() == digest


def record_parse(target: Path, digest: str) -> None:
    """The manifest in ``target`` was made from the project files hashed ``digest``."""
    (target / STAMP).write_text(digest)


def start_parse(settings: Settings) -> None:
    """Start ``dbt parse`` into ``settings``' manifest folder unless its manifest is current
    or a parse into it is already under way; :func:`finish_started_parse` waits for it."""
    target = manifest_dir(settings)
    if target in _started:
        return
    digest = project_digest()
    if manifest_is_current(target, digest):
        return
    dbt_environment(settings)
    target.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [str(DBT_EXECUTABLE), "parse", "--quiet"],
        cwd=TRANSFORMS,
        env=_parse_environment(target),
        # on a failure the definitions parse again, through dagster-dbt, showing dbt's error
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _started[target] = StartedParse(process, target, digest)


def parse_under_way(settings: Settings) -> bool:
    """A parse :func:`start_parse` started into ``settings``' manifest folder is still running
    (the definitions will wait for it)."""
    started = _started.get(manifest_dir(settings))
    return started is not None and started.process.poll() is None


def finish_started_parse(target: Path) -> bool:
    """Wait for the parse :func:`start_parse` started into ``target``, if any; True when it
    made a current manifest there (False: none was started, or it failed and the caller
    parses again, showing dbt's error)."""
    started = _started.pop(target, None)
    if started is None or started.process.wait() != 0:
        return False
    record_parse(target, started.digest)
    return True


def _parse_environment(target: Path) -> dict[str, str]:
    """The environment dagster-dbt's ``DbtCliResource.cli`` gives dbt, for a parse into
    ``target``."""
    return {
        **os.environ,
        "DAGSTER_DBT_CLI": "true",
        "PYTHONUNBUFFERED": "1",
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DBT_LOG_FORMAT": "json",
        "DBT_TARGET_PATH": str(target),
        "DBT_LOG_PATH": str(target),
        "DBT_PROFILES_DIR": str(TRANSFORMS),
        "DBT_PROJECT_DIR": str(TRANSFORMS),
    }
