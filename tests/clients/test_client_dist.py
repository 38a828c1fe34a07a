"""findata-python installs as its README says: ``make client-dist`` builds its wheel and sdist (the
wheel from the sdist, offline), and the README's install line, run as written in a fresh virtual
environment, installs the wheel with its extras; the installed client imports from there, without
the server's package, and its command runs."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from findata_client import __version__

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "clients" / "python" / "README.md"
DIST = Path("clients/python/dist")

CHECK = """
import sys
import duckdb, pyarrow
import findata_client
from findata_client import AsyncClient, Client, Replica, RowList
frame = RowList([{"date": "2025-01-02", "close": 1.5}]).to_pandas()
assert list(frame.columns) == ["date", "close"] and frame["close"][0] == 1.5
assert not [name for name in sys.modules if name == "findata" or name.startswith("findata.")]
print(findata_client.__file__)
print(findata_client.__version__)
"""


def _install_line() -> str:
    """The README's line installing from the built distributions."""
    lines = [line for line in README.read_text().splitlines() if line.startswith("pip install")]
    (line,) = [line for line in lines if str(DIST) in line]
    return re.sub(r"\s+#.*$", "", line)


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


def test_the_readme_install_line_installs_the_built_wheel(tmp_path: Path) -> None:
    # laid out like a checkout, so the README's relative paths hold
    venv = Path(sys.prefix)
    built = _run(
        [
            "make",
            "-C",
            str(ROOT),
            "-o",
            str(venv / "bin" / "findata"),  # build only: never reinstall the test's venv
            f"VENV={venv}",
            f"CLIENT_DIST={tmp_path / DIST}",
            "client-dist",
        ],
        ROOT,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = tmp_path / DIST / f"findata_python-{__version__}-py3-none-any.whl"
    sdist = tmp_path / DIST / f"findata_python-{__version__}.tar.gz"
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    package = {
        p.relative_to(README.parent).as_posix()
        for p in (README.parent / "findata_client").glob("*.py")
    }
    assert package | {"findata_client/py.typed"} <= in_wheel
    assert package | {"findata_client/py.typed", "README.md", "pyproject.toml"} <= in_sdist

    fresh = tmp_path / "fresh"
    made = _run([sys.executable, "-m", "venv", str(fresh)], tmp_path)
    assert made.returncode == 0, made.stderr
    line = shlex.split(_install_line())
    installed = _run([str(fresh / "bin" / "pip"), *line[1:], "--quiet"], tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    imported = _run([str(fresh / "bin" / "python"), "-c", CHECK], elsewhere)
    assert imported.returncode == 0, imported.stderr
    location, version = imported.stdout.split()
    assert Path(location).is_relative_to(fresh) and version == __version__
    command = _run([str(fresh / "bin" / "findata-python"), "--help"], elsewhere)
    assert command.returncode == 0 and "sync" in command.stdout
