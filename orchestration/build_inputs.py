"""What a build reads, fingerprinted, so that a refresh with nothing new stops before any work.

A build's output depends on the landing files, the code that reads and transforms them (the
readers, the dbt project, the checks, publishing) and the contracts. The fingerprint hashes
each landing file's path, size and modification time (as the landing cache keys its units) and
the content of every code and contract file. A refresh computes it first; when it equals the
fingerprint the last successful build recorded, and that build's version is still the current
one and its warehouse is still there, the refresh stops, saying so.

The record is a file beside the warehouse (``build/built_from.json``): it describes that
warehouse, on this pipeline host. It is written in two steps: ``building_from.json`` when a
run starts building, renamed to ``built_from.json`` by the publish step once the run has
published (or found nothing to publish); a run that fails in between leaves no record, and the
next one builds.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import findata
import findata.contracts
import findata.orchestration
import findata.transforms
from findata.settings import Settings

#: the code and contracts a build runs (their files' contents are hashed)
CODE_PACKAGES = (findata, findata.orchestration, findata.transforms, findata.contracts)
CODE_SUFFIXES = {".py", ".sql", ".yml", ".yaml", ".csv"}
BUILT_FROM = "built_from.json"
BUILDING_FROM = "building_from.json"


@dataclass(frozen=True)
class BuildInputs:
    """A build's inputs: their fingerprint and how many files it covers."""

    fingerprint: str
    landing_files: int
    code_files: int
    code: str  # the fingerprint of the code and contracts alone


@dataclass(frozen=True)
class BuiltFrom:
    """What the last successful build recorded: its inputs and the version current after it."""

    fingerprint: str
    version: str
    code: str = ""  # of the code and contracts alone ("" in a record that did not keep it)


def build_inputs(settings: Settings) -> BuildInputs:
    """The fingerprint of landing (paths, sizes, modification times) and of the code and
    contracts (contents)."""
    landing = _files(settings.landing_dir, suffixes=None)
    code_digest, code_files = code_fingerprint()
    digest = hashlib.sha256(code_digest.encode())
    digest.update(files_fingerprint(settings.landing_dir, landing).encode())
    return BuildInputs(digest.hexdigest(), len(landing), code_files, code_digest)


def nothing_changed_since(settings: Settings, inputs: BuildInputs) -> str | None:
    """The current version's label when ``inputs`` are those it was built from (and its
    warehouse is still there): a build would make it again. None when a build is needed."""
    built = last_built(settings)
    if built is None or built.fingerprint != inputs.fingerprint:
        return None
    from findata.published.versions import current_version_at  # SQLAlchemy: ~0.6 s of imports

    current = current_version_at(settings.control_plane_url)
    return current.label if current is not None and built.version == current.label else None


def files_fingerprint(root: Path, files: list[Path]) -> str:
    """The fingerprint of ``files`` under ``root``: each one's path, size and modification time
    (as the landing cache keys its units)."""
    digest = hashlib.sha256()
    for path in files:
        stat = path.stat()
        relative = path.relative_to(root)
        digest.update(f"{relative} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def code_fingerprint() -> tuple[str, int]:
    """The fingerprint of the code and contracts a build runs (their files' contents), and how
    many files it covers."""
    digest = hashlib.sha256()
    count = 0
    for package in CODE_PACKAGES:
        root = Path(package.__file__).parent  # type: ignore[arg-type]
        for path in _files(root, suffixes=CODE_SUFFIXES):
            digest.update(f"{package.__name__} {path.relative_to(root)}\n".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
            count += 1
    return digest.hexdigest(), count


def last_built(settings: Settings) -> BuiltFrom | None:
    """The record of the last successful build, if it still describes the warehouse."""
    record = settings.build_dir / BUILT_FROM
    if not (record.exists() and settings.warehouse_path.exists()):
        return None
    try:
        return _built_from(json.loads(record.read_text()))
    except (ValueError, KeyError, TypeError):
        return None  # unreadable: build


def start_build(
    settings: Settings, inputs: BuildInputs, run_id: str, *, forced: bool = False
) -> None:
    """Run ``run_id`` starts building from ``inputs``: the last record no longer describes the
    warehouse (it is about to change), and the new one waits for the publish step. The last
    record is kept in the pending one (``build_before``) unless the build is ``forced``."""
    settings.build_dir.mkdir(parents=True, exist_ok=True)
    before = None if forced else last_built(settings)
    (settings.build_dir / BUILT_FROM).unlink(missing_ok=True)
    started = {
        "fingerprint": inputs.fingerprint,
        "code": inputs.code,
        "run_id": run_id,
        "before": None if before is None else asdict(before),
    }
    (settings.build_dir / BUILDING_FROM).write_text(json.dumps(started))


def build_before(settings: Settings, run_id: str) -> BuiltFrom | None:
    """What the successful build before run ``run_id``'s was made from (None when the run did
    not start a build of its own, was forced, or had no successful build before it)."""
    pending = settings.build_dir / BUILDING_FROM
    try:
        started = json.loads(pending.read_text())
        if started.get("run_id") != run_id or started.get("before") is None:
            return None
        return _built_from(started["before"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def comparable_version(settings: Settings, run_id: str) -> tuple[str, Path] | None:
    """The current version (label, file) when run ``run_id``'s marts can be compared with it:
    the run started a build of its own, not forced, after a successful build made by the same
    code and contracts, whose version is still current and on disk. None otherwise."""
    before = build_before(settings, run_id)
    if before is None or before.code != code_fingerprint()[0]:
        return None
    from findata.published.versions import current_version_at  # SQLAlchemy: ~0.6 s of imports

    current = current_version_at(settings.control_plane_url)
    if current is None or current.label != before.version:
        return None
    published = settings.published_dir / current.file_name
    return (current.label, published) if published.exists() else None


def _built_from(kept: dict[str, object]) -> BuiltFrom:
    return BuiltFrom(str(kept["fingerprint"]), str(kept["version"]), str(kept.get("code", "")))


def finish_build(settings: Settings, run_id: str, version: str) -> None:
    """Run ``run_id`` published (or found nothing to publish) and ``version`` is current:
    record what it was built from. Nothing is recorded for a run that did not start from a
    fingerprint of its own (a subset materialised in the UI, after a failed run)."""
    pending = settings.build_dir / BUILDING_FROM
    if not pending.exists():
        return
    started = json.loads(pending.read_text())
    if started.get("run_id") != run_id:
        return
    record = settings.build_dir / f"{BUILT_FROM}.tmp"
    built = BuiltFrom(started["fingerprint"], version, started.get("code", ""))
    record.write_text(json.dumps(asdict(built)))
    os.replace(record, settings.build_dir / BUILT_FROM)
    pending.unlink()


def _files(root: Path, suffixes: set[str] | None) -> list[Path]:
    """Every file under ``root`` in a stable order (caches and hidden folders left out)."""
    if not root.exists():
        return []
    found: list[Path] = []
    for folder, folders, names in os.walk(root):
        folders[:] = sorted(f for f in folders if f != "__pycache__" and not f.startswith("."))
        for name in sorted(names):
            if suffixes is None or Path(name).suffix in suffixes:
                found.append(Path(folder) / name)
    return found
