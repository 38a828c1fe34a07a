"""Builds one test run shares across its pytest-xdist workers: the first worker to ask builds
under a file lock, the others wait and read the result. Everything built here is read-only to
the tests; a fixture that writes gets a copy of its own."""

from __future__ import annotations

import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

#: written last: a build that raised half-way is never taken for done
DONE = ".built"
#: what the build function returned, for the workers that did not run it
RESULT = ".result.pickle"
#: the files a copy of a build leaves out
BUILD_MARKS = (DONE, RESULT)


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Any]
) -> tuple[Path, Any]:
    """``build(folder)`` run once per test run, for every worker; returns the folder and what
    ``build`` returned (pickled for the workers that waited). Without xdist, the session's own
    temporary folder holds it."""
    session_root = tmp_path_factory.getbasetemp()
    # under xdist each worker's base folder is a child of the run's (which xdist names in
    # PYTEST_XDIST_WORKER); a lone session's is its own
    shared_root = session_root.parent if os.environ.get("PYTEST_XDIST_WORKER") else session_root
    folder = shared_root / f"shared-{name}"
    with FileLock(str(shared_root / f"shared-{name}.lock")):
        if (folder / DONE).exists():
            return folder, pickle.loads((folder / RESULT).read_bytes())
        # what a worker's build that failed left (that worker's tests reported why)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        result = build(folder)
        (folder / RESULT).write_bytes(pickle.dumps(result))
        (folder / DONE).touch()
    return folder, result
