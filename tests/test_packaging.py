"""findata installs as one import namespace: the checkout's top-level folders become findata.api,
findata.accounts, ... and a built wheel carries everything an installed findata needs to run its
pipeline outside the checkout (contracts, migrations, the dbt project, the Dagster instance)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PIP = (sys.executable, "-m", "pip")
QUIET = ("--quiet", "--no-deps")


def _setuptools_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _folder_of(package: str, package_dir: dict[str, str]) -> Path:
    """The checkout folder of ``package`` by the longest mapped prefix (as setuptools reads it)."""
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        prefix = ".".join(parts[:cut])
        if prefix in package_dir:
            return ROOT / package_dir[prefix] / Path(*parts[cut:])
    raise AssertionError(f"{package} has no package-dir mapping")


#: what a run leaves in the checkout's folders (git ignores them): never packaged
NOT_PACKAGED = {"__pycache__", "target", "logs", "dbt_packages"}


def test_every_folder_is_an_installed_package() -> None:
    """Every folder of code or data under the mapped folders is listed (an unlisted one would be
    missing from the wheel), and every listed package has its folder."""
    config = _setuptools_config()
    listed = {_folder_of(package, config["package-dir"]) for package in config["packages"]}
    assert all(folder.is_dir() for folder in listed), "a listed package has no folder"
    for top in set(config["package-dir"].values()):
        for folder in [ROOT / top, *(ROOT / top).rglob("*")]:
            ignored = NOT_PACKAGED & set(folder.relative_to(ROOT).parts)
            if folder.is_dir() and not ignored and any(p.is_file() for p in folder.iterdir()):
                assert folder in listed, f"{folder.relative_to(ROOT)} is not installed"


def _declared(pyproject: Path, *extras: str) -> set[str]:
    """The distributions ``pyproject`` declares (its dependencies and those of ``extras``)."""
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = [*project["dependencies"]]
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    return {canonicalize_name(Requirement(text).name) for text in requirements}


def _imported_modules(files: list[Path]) -> dict[str, Path]:
    """Every top-level module ``files`` import (at module level or inside a function), with
    one file importing it; relative imports, ``__future__`` and sibling modules left out."""
    found: dict[str, Path] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                # a script's folder is on its path (tests, benchmarks); in a package an
                # absolute import never means a sibling (accounts/counters/redis.py: redis)
                script = not (path.parent / "__init__.py").exists()
                sibling = script and (
                    (path.parent / f"{top}.py").exists() or (path.parent / top).is_dir()
                )
                if top != "__future__" and not sibling:
                    found.setdefault(top, path)
    return found


#: what each body of code may import: the distributions its pyproject declares (with extras)
CODE_AND_DECLARATIONS = (
    (tuple(_setuptools_config()["package-dir"].values()), ROOT / "pyproject.toml", ()),
    (("tests", "benchmarks"), ROOT / "pyproject.toml", ("test",)),
    (("clients/python/findata_client",), ROOT / "clients/python/pyproject.toml", ("all",)),
)
#: our own import names (the server's namespace, its client, the tests' helpers)
OURS = {"findata", "findata_client", "tests", "conftest"}


@pytest.mark.parametrize(
    ("folders", "pyproject", "extras"), CODE_AND_DECLARATIONS, ids=lambda v: str(v)[:40]
)
def test_every_imported_distribution_is_declared(
    folders: tuple[str, ...], pyproject: Path, extras: tuple[str, ...]
) -> None:
    """A module imported from a distribution only another dependency brings (starlette through
    fastapi, say) works until that dependency changes its own: each is declared itself."""
    files = [p for folder in folders for p in (ROOT / folder).rglob("*.py")]
    declared = _declared(pyproject, *extras)
    providers = packages_distributions()
    undeclared = {}
    for module, path in sorted(_imported_modules(files).items()):
        if module in sys.stdlib_module_names or module in OURS:
            continue
        # a module several distributions fill (dbt: dbt-core and its adapters) needs one of them
        distributions = {canonicalize_name(name) for name in providers.get(module, [])}
        if not distributions & declared:
            undeclared[module] = (sorted(distributions), str(path.relative_to(ROOT)))
    assert not undeclared, (
        f"imported but not declared in {pyproject.relative_to(ROOT)}: {undeclared}"
    )


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout's own files (tracked or new, never ignored build output), as a clean clone
    has them."""
    copy = tmp_path_factory.mktemp("source")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    return copy


def _wheel_of(target: Path, out: Path) -> Path:
    """``pip wheel`` of a source folder or an sdist, offline, with the venv's setuptools."""
    subprocess.run(
        [*PIP, "wheel", *QUIET, "--no-build-isolation", "--wheel-dir", str(out), str(target)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("findata-*.whl")
    return built


@pytest.fixture(scope="module")
def wheel(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel ``pip install .`` builds from a clean clone."""
    return _wheel_of(source, tmp_path_factory.mktemp("wheel"))


def test_the_sdist_builds_the_same_wheel(
    source: Path, wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    out = tmp_path_factory.mktemp("sdist")
    subprocess.run(
        [
            sys.executable,
            "-c",
            f"from setuptools import build_meta; build_meta.build_sdist({str(out)!r})",
        ],
        cwd=source,
        check=True,
        capture_output=True,
    )
    (sdist,) = out.glob("findata-*.tar.gz")
    from_sdist = _wheel_of(sdist, tmp_path_factory.mktemp("wheel-from-sdist"))
    assert zipfile.ZipFile(from_sdist).namelist() == zipfile.ZipFile(wheel).namelist()


def test_the_wheel_holds_only_the_findata_namespace(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"findata"}
    for expected in (
        "findata/api/data_requests.py",
        "findata/api/endpoints/prices.py",
        "findata/contracts/endpoints/prices.yaml",
        "findata/contracts/datasets/prices.yaml",
        "findata/contracts/errors.yaml",
        "findata/contracts/raw_tables.yaml",
        "findata/control_plane/migrations/env.py",
        "findata/orchestration/dagster_instance.py",
        "findata/transforms/dbt_project.yml",
        "findata/transforms/profiles.yml",
        "findata/transforms/models/marts/prices.sql",
    ):
        assert expected in names, expected
    models = [n for n in names if n.startswith("findata/transforms/models/")]
    in_checkout = [p for p in (ROOT / "transforms" / "models").rglob("*") if p.is_file()]
    assert len(models) == len(in_checkout)
    assert not any("/target/" in n or "/logs/" in n for n in names)


def test_the_installed_wheel_runs_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [*PIP, "install", *QUIET, "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # the wheel's findata comes first on the path; the venv gives the dependencies
    env = {**os.environ, "PYTHONPATH": str(site), "FINDATA_HOME": str(tmp_path / "home")}

    def python(code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    for name in (
        "api",
        "accounts",
        "contracts",
        "orchestration",
        "sources",
        "demo",
        "webhooks",
        "transforms",
    ):
        refused = python(f"import {name}")
        assert refused.returncode != 0 and "ModuleNotFoundError" in refused.stderr, name

    # the contracts, the migrations and the dbt project (parsed by dbt) all come from the wheel
    ran = python(
        "import sys; from findata.cli import app; sys.argv = ['findata', 'db', 'upgrade']\n"
        "try:\n    app()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
        "import findata.api.app, findata.orchestration.definitions as d\n"
        "from findata.orchestration.assets.dbt import TRANSFORMS, dbt_project\n"
        "outside = [m.__file__ for n, m in list(sys.modules.items()) if n.startswith('findata')"
        f" and getattr(m, '__file__', None) and not m.__file__.startswith({str(site)!r})]\n"
        "assert not outside, outside\n"
        "print(findata.api.app.__file__); print(TRANSFORMS); print(dbt_project.manifest_path)"
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    app_file, transforms, manifest = ran.stdout.strip().splitlines()[-3:]
    assert Path(app_file).is_relative_to(site)
    assert Path(transforms) == site / "findata" / "transforms"
    assert Path(manifest).is_file() and Path(manifest).is_relative_to(tmp_path / "home")
    assert not (site / "findata" / "transforms" / "target").exists()
