"""The README and docs/ hold true: every relative link and anchor resolves, nothing in the
repository points outside it, the API reference is the one the contracts generate (and names
every endpoint, parameter and error code), every setting and command is documented, and every
file or folder the docs name exists."""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import typer

from findata.cli import app
from findata.contracts.endpoints import endpoint_names, load_endpoint_contract
from findata.contracts.errors import load_errors
from findata.contracts.landing import landing_format_names
from findata.settings import Settings
from findata.sources.landing import LANDING_SOURCES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GENERATOR = DOCS / "generate_api_reference.py"
REFERENCE = DOCS / "api.md"
OPERATING = DOCS / "operating.md"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
#: read from the environment but not settings: the client's key (`findata mcp`, findata-python),
#: the Dagster instance's database (set by findata for Dagster), the dbt profile's warehouse
NOT_SETTINGS = {"FINDATA_API_KEY", "FINDATA_DAGSTER_POSTGRES_URL", "FINDATA_WAREHOUSE"}
#: the top-level folders whose files the docs name in code spans
FOLDERS = (
    "accounts", "api", "benchmarks", "clients", "contracts", "demo", "deploy", "docs", "findata",
    "orchestration", "sources", "tests", "transforms",
)  # fmt: skip
#: written in pieces so that this file does not hold what it looks for
OUTSIDE = ("../" + "shared", "/" + "work/")

FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]+`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _prose(text: str) -> str:
    """Markdown without its code blocks and code spans (links inside them are not links)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lower-cased, punctuation but hyphens and
    underscores dropped, spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def _anchors(path: Path) -> frozenset[str]:
    """The anchors of a Markdown file (a repeated heading gets -1, -2, … as on GitHub)."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        anchors.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return frozenset(anchors)


def _broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """The relative links of ``page`` that lead nowhere: outside ``root``, to no file, or to no
    heading of the Markdown file they name."""
    broken = []
    for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if root not in linked.parents and linked != root:
            broken.append(f"{target}: outside the repository")
        elif not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (linked.suffix != ".md" or anchor not in _anchors(linked)):
            broken.append(f"{target}: no such anchor")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=_relative)
def test_every_link_resolves(page: Path) -> None:
    assert not _broken_links(page)


def test_the_link_check_finds_what_leads_nowhere(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "other.md").write_text("# Other\n\n## 2. The dbt step\n")
    page = root / "docs" / "page.md"
    page.write_text(
        "# Page\n\n[good](other.md#2-the-dbt-step), [self](#page), [web](https://example.com)"
        ", `[code](nowhere.md)`, [file](missing.md), [anchor](other.md#the-dbt-step), "
        "[out](../../elsewhere.md), [own](#nothing)\n"
    )
    assert _broken_links(page, root) == [
        "missing.md: no such file",
        "other.md#the-dbt-step: no such anchor",
        "../../elsewhere.md: outside the repository",
        "#nothing: no such anchor",
    ]


def _tracked_files() -> list[Path]:
    """The repository's files: git's list, or (outside a git checkout) every file but the
    virtual environment's, the demo home's and caches."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode == 0 and listed.stdout:
        return [ROOT / name for name in listed.stdout.decode().split("\0") if name]
    skipped = {".git", ".venv", ".findata", "__pycache__", "test-artifacts", ".ruff_cache"}
    return [
        p for p in ROOT.rglob("*") if p.is_file() and not skipped & set(p.relative_to(ROOT).parts)
    ]


def test_nothing_points_outside_the_repository() -> None:
    found = []
    for path in _tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue  # binary files, and files deleted but not yet committed
        for number, line in enumerate(text.splitlines(), start=1):
            if any(pattern in line for pattern in OUTSIDE):
                found.append(f"{_relative(path)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def _run_generator(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GENERATOR), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )


def test_the_api_reference_is_generated_from_the_contracts() -> None:
    result = _run_generator("--check")
    assert result.returncode == 0, result.stderr


def test_check_mode_fails_on_a_stale_reference(tmp_path: Path) -> None:
    stale = tmp_path / "api.md"
    stale.write_text(REFERENCE.read_text().replace("Daily prices of securities", "Old prices"))
    result = _run_generator("--check", "--output-dir", str(tmp_path))
    assert result.returncode == 1
    assert "api.md" in result.stderr and "out of date" in result.stderr
    stale.unlink()
    assert _run_generator("--check", "--output-dir", str(tmp_path)).returncode == 1


def test_the_reference_names_every_endpoint_parameter_and_error() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    for name in endpoint_names():
        contract = load_endpoint_contract(name)
        assert f"### {name}\n" in text, name
        section = text.split(f"### {name}\n", 1)[1].split("\n### ", 1)[0]
        for path in contract.paths:
            assert f"`{path}`" in section, (name, path)
        for parameter in contract.all_parameters:
            assert f"| `{parameter.name}` |" in section, (name, parameter.name)
            if parameter.error:
                assert " ".join(parameter.error.split()) in section, (name, parameter.name)
        for field in contract.fields.by_default:
            assert f"`{field}`" in section, (name, field)
    for code, kind in load_errors().errors.items():
        assert f"| `{code}` | {kind.status} |" in text, code


@cache
def _documented_settings() -> str:
    """The settings table of docs/operating.md."""
    text = OPERATING.read_text(encoding="utf-8")
    return text.split("## Settings", 1)[1].split("\n## ", 1)[0]


def test_every_setting_is_documented() -> None:
    table = _documented_settings()
    missing = [
        f"FINDATA_{name.upper()}"
        for name in Settings.model_fields
        if f"| `FINDATA_{name.upper()}` |" not in table
    ]
    assert not missing, f"not in docs/operating.md's settings: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=_relative)
def test_every_variable_the_docs_name_is_a_setting(page: Path) -> None:
    settings = {f"FINDATA_{name.upper()}" for name in Settings.model_fields}
    named = set(re.findall(r"\bFINDATA_[A-Z][A-Z0-9_]*[A-Z0-9]\b", page.read_text()))
    unknown = sorted(named - settings - NOT_SETTINGS)
    assert not unknown, f"no such setting: {unknown}"


@cache
def _commands() -> dict[str, set[str]]:
    """Each command of the command line, with its subcommands (empty for a plain command)."""
    root = typer.main.get_command(app)
    commands: dict[str, set[str]] = {}
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        if command.hidden:
            continue
        sub = getattr(command, "commands", {})  # a group's subcommands
        commands[name] = {n for n, c in sub.items() if not c.hidden}
    return commands


def test_every_command_is_documented() -> None:
    text = OPERATING.read_text(encoding="utf-8")
    rows = [line for line in text.split("## Command line", 1)[1].splitlines() if line[:3] == "| `"]
    missing = []
    for name, subcommands in _commands().items():
        own = " ".join(
            row for row in rows if row.split("|")[1].strip().startswith(f"`findata {name}")
        )
        if not own:
            missing.append(name)
        missing += [f"{name} {sub}" for sub in subcommands if not re.search(rf"\b{sub}\b", own)]
    assert not missing, f"not in docs/operating.md's command table: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=_relative)
def test_every_command_the_docs_name_exists(page: Path) -> None:
    text = page.read_text(encoding="utf-8").replace("\\|", "|")
    code = " ".join(FENCE.findall(text) + CODE_SPAN.findall(text))
    unknown = []
    for first, second in re.findall(r"\bfindata ([a-z][a-z-]*)(?: ([a-z][a-z|-]*))?", code):
        commands = _commands()
        if first not in commands:
            unknown.append(first)
        elif commands[first] and second:
            unknown += [f"{first} {s}" for s in second.split("|") if s not in commands[first]]
    assert not unknown, unknown


@pytest.mark.parametrize("page", PAGES, ids=_relative)
def test_every_file_the_docs_name_exists(page: Path) -> None:
    pattern = re.compile(rf"^`((?:{'|'.join(FOLDERS)})/[\w./-]*)`$")
    missing = []
    for span in CODE_SPAN.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        match = pattern.match(span)
        if match and not (ROOT / match.group(1)).exists():
            missing.append(match.group(1))
    assert not missing, missing


LANDING_GENERATOR = DOCS / "generate_landing_reference.py"


def test_the_vendor_file_formats_are_generated_from_the_landing_contracts() -> None:
    result = subprocess.run(
        [sys.executable, str(LANDING_GENERATOR), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name", landing_format_names())
def test_each_vendor_format_has_an_example_file_its_reader_reads(name: str) -> None:
    example = DOCS / "examples" / "landing" / f"{name}.csv"
    rows = LANDING_SOURCES[name].read_unit(example)[name]
    assert len(rows) == len(example.read_text().splitlines()) - 1 > 0
