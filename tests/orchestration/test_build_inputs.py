"""The build-inputs fingerprint (``orchestration/build_inputs.py``): what changes it, what does
not, and the record a run leaves only once it has published. The whole refresh stopping at its
first step is in ``test_pipeline.py`` (the ``unchanged`` step)."""

from __future__ import annotations

import os
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from findata.orchestration import build_inputs as inputs_module
from findata.orchestration.build_inputs import (
    build_before,
    build_inputs,
    finish_build,
    last_built,
    start_build,
)
from findata.settings import Settings


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """A home with two landing files and one "code" package of two files."""
    home = tmp_path / "home"
    (home / "landing" / "prices").mkdir(parents=True)
    (home / "landing" / "prices" / "a.csv").write_text("entity_id,date\n1,2026-01-02\n")
    (home / "landing" / "prices" / "b.csv").write_text("entity_id,date\n2,2026-01-02\n")
    code = tmp_path / "code"
    (code / "__pycache__").mkdir(parents=True)
    (code / "__init__.py").write_text("")
    (code / "model.sql").write_text("select 1")
    (code / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0")
    package = types.SimpleNamespace(__name__="code", __file__=str(code / "__init__.py"))
    monkeypatch.setattr(inputs_module, "CODE_PACKAGES", (package,))
    return Settings(home=home)


def test_fingerprint_is_stable_and_covers_landing_and_code(settings: Settings) -> None:
    first = build_inputs(settings)
    assert (first.landing_files, first.code_files) == (2, 2)
    assert build_inputs(settings) == first
    landing = settings.landing_dir / "prices"
    code = Path(inputs_module.CODE_PACKAGES[0].__file__).parent

    def changed_by(edit: Callable[[], object]) -> bool:
        before = build_inputs(settings).fingerprint
        edit()
        return build_inputs(settings).fingerprint != before

    stat = (landing / "a.csv").stat()
    assert changed_by(lambda: (landing / "a.csv").write_text("entity_id,date\n1,2026-01-05\n"))
    assert changed_by(lambda: os.utime(landing / "b.csv", ns=(stat.st_atime_ns, 1)))
    assert changed_by(lambda: (landing / "c.csv").write_text(""))
    assert changed_by(lambda: (landing / "c.csv").rename(landing / "d.csv"))
    assert changed_by(lambda: (code / "model.sql").write_text("select 2"))
    # a compiled file, or a file the build does not read, changes nothing
    assert not changed_by(lambda: (code / "__pycache__" / "x.pyc").write_bytes(b"\1"))
    assert not changed_by(lambda: (code / "notes.txt").write_text("a note"))


def test_a_build_is_recorded_only_by_the_run_that_started_it(settings: Settings) -> None:
    inputs = build_inputs(settings)
    settings.build_dir.mkdir(parents=True)
    settings.warehouse_path.write_bytes(b"")
    assert last_built(settings) is None
    start_build(settings, inputs, "run-1")
    finish_build(settings, "run-2", "v1")  # another run (a subset in the UI): no record
    assert last_built(settings) is None
    finish_build(settings, "run-1", "v1")
    recorded = last_built(settings)
    assert recorded is not None and (recorded.fingerprint, recorded.version) == (
        inputs.fingerprint,
        "v1",
    )
    assert recorded.code == inputs.code != ""
    start_build(settings, inputs, "run-3")  # a new build starts: the old record is void
    assert last_built(settings) is None
    assert build_before(settings, "run-3") == recorded  # and kept as the build before it
    assert build_before(settings, "run-4") is None
    finish_build(settings, "run-3", "v2")
    start_build(settings, inputs, "run-5", forced=True)
    assert build_before(settings, "run-5") is None  # a forced build checks everything
    finish_build(settings, "run-5", "v2")
    settings.warehouse_path.unlink()  # the record describes a warehouse that is gone
    assert last_built(settings) is None
