"""The dbt project's manifest (``dbt parse``) and the environment dbt runs in.

The definitions make an asset of every dbt model from ``manifest.json``. A home's first
refresh, and the first after the dbt project changed, has no current manifest: the definitions
parse the project then (``assets/dbt.py``), and a stamp of the project files' hash beside the
manifest says whether it is current.

Nothing here imports Dagster or dbt.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from importlib import resources
from pathlib import Path

from findata.settings import Settings

# the dbt project travels with the package (``findata.transforms``: transforms/ in a checkout)
TRANSFORMS = Path(str(resources.files("findata.transforms")))
#: the files of the project that shape its manifest
PROJECT_PARTS = ("models", "macros", "tests", "dbt_project.yml", "profiles.yml")
#: beside the manifest: the hash of the project files it was made from
STAMP = "findata-project.sha256"
#: dbt's record of what it parsed, read by the next parse to parse only what changed
PARTIAL_PARSE = "partial_parse.msgpack"


def dbt_environment(settings: Settings) -> None:
    """Point dbt's profile at ``settings``' build warehouse (its memory limit, its threads), and its
    artifacts and logs at the home's build folder (the project folder may be a read-only
    installed package)."""
    os.environ.update(dbt_variables(settings))
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "0")


def dbt_variables(settings: Settings) -> dict[str, str]:
    """The environment variables dbt's profile and flags read for ``settings``' home."""
    return {
        "FINDATA_WAREHOUSE": str(settings.warehouse_path),
        "FINDATA_BUILD_MEMORY_LIMIT": settings.build_memory_limit,
        "FINDATA_BUILD_WORKERS": str(settings.build_workers),
        "DBT_TARGET_PATH": str(settings.dbt_target_dir),
        "DBT_LOG_PATH": str(settings.dbt_target_dir / "logs"),
    }


def build_target(settings: Settings) -> Path:
    """One target folder for every build: each build's parse reads the previous
    ``partial_parse.msgpack`` there and parses only what changed (~2 s otherwise); the first
    starts from the one the manifest's parse left. Refreshes do not overlap (they write the one
    build warehouse), so neither do their targets."""
    target = settings.dbt_target_dir / "build"
    parsed = manifest_dir(settings) / PARTIAL_PARSE
    if not (target / PARTIAL_PARSE).exists() and parsed.exists():
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(parsed, target / PARTIAL_PARSE)
    return target


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
