"""Landing units parsed by worker processes (``sources/landing_parallel.py``): the same
tables in the same order as parsed here, a malformed file's error as the serial reading raises
it, and the pool only from ``POOL_FROM_UNITS`` units."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import Demo

from findata.sources.landing import LANDING_SOURCES, unit_key
from findata.sources.landing_parallel import CHUNK_UNITS, POOL_FROM_UNITS, read_units
from findata.sources.readers.errors import MalformedFileError

SOURCE = "sec_form4"


def _units(folder: Path) -> list[tuple[str, Path]]:
    return [(unit_key(unit), unit) for unit in sorted(folder.glob("*.xml"))]


@pytest.fixture
def form4s(small_demo: Demo, tmp_path: Path) -> Path:
    """A copy of the first ``POOL_FROM_UNITS`` + 6 Form 4 files of the small demo."""
    folder = tmp_path / "form4"
    folder.mkdir()
    found = sorted((small_demo.landing / LANDING_SOURCES[SOURCE].folder).glob("*.xml"))
    assert len(found) >= POOL_FROM_UNITS + 6
    for path in found[: POOL_FROM_UNITS + 6]:
        shutil.copy(path, folder / path.name)
    return folder


def _parsed_here_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's reader of the source refuses to parse: only workers (which import the
    readers afresh) can."""

    def refuse(unit: Path) -> dict[str, pd.DataFrame]:
        raise AssertionError(f"{unit.name} parsed in the pipeline's own process")

    source = dataclasses.replace(LANDING_SOURCES[SOURCE], read_unit=refuse)
    monkeypatch.setitem(LANDING_SOURCES, SOURCE, source)


def test_workers_give_the_serial_tables_in_the_serial_order(
    form4s: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    units = _units(form4s)
    serial = list(read_units(SOURCE, units, workers=1))
    _parsed_here_refused(monkeypatch)
    parallel = list(read_units(SOURCE, units, workers=2))
    assert [key for key, _ in parallel] == [key for key, _ in units]
    assert [key for key, _ in serial] == [key for key, _ in parallel]
    for (_, expected), (_, got) in zip(serial, parallel, strict=True):
        assert expected.keys() == got.keys()
        for table in expected:
            pd.testing.assert_frame_equal(expected[table], got[table])


def test_few_units_are_parsed_here(form4s: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    units = _units(form4s)[: POOL_FROM_UNITS - 1]
    _parsed_here_refused(monkeypatch)
    with pytest.raises(AssertionError, match="parsed in the pipeline's own process"):
        list(read_units(SOURCE, units, workers=2))


def test_a_malformed_file_raises_its_error_from_a_worker_as_it_would_here(
    form4s: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    units = _units(form4s)
    broken = units[40][1]
    broken.write_text(broken.read_text()[:200])  # cut off mid-document
    units = _units(form4s)  # its key changed with its size
    with pytest.raises(MalformedFileError) as here:
        list(read_units(SOURCE, units, workers=1))
    _parsed_here_refused(monkeypatch)
    seen = []
    with pytest.raises(MalformedFileError) as in_worker:
        for key, _ in read_units(SOURCE, units, workers=2):
            seen.append(key)
    assert (in_worker.value.path, in_worker.value.problem) == (here.value.path, here.value.problem)
    assert str(in_worker.value) == str(here.value)
    assert in_worker.value.path == str(broken)
    # what came back before it came in order (a worker's batch with the broken file in it
    # comes back as the error alone: the load stops there either way)
    assert seen == [key for key, _ in units[: len(seen)]]
    assert 40 - CHUNK_UNITS <= len(seen) <= 40
