"""Generate ``docs/landing-formats.md``, the vendor files' layouts, from the landing contracts.

    python docs/generate_landing_reference.py            # write docs/landing-formats.md
    python docs/generate_landing_reference.py --check    # exit 1 when it is out of date

Every CSV format of ``contracts/landing/*.yaml`` (prices, corporate actions, the security
master, index membership: the files that do not come from the SEC): where its files go, its
columns with their types, whether required and their rules, the row rules, the publishers'
layouts accepted besides it, and an example file (``docs/examples/landing/<format>.csv``, which
the docs tests read with the format's reader).
"""

from __future__ import annotations

import sys
from pathlib import Path

from findata.contracts.landing import (
    Column,
    LandingFormat,
    landing_format_names,
    load_landing_format,
)
from findata.generated_files import generator_main

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "landing-formats.md"
EXAMPLES = HERE / "examples" / "landing"
COMMAND = "python docs/generate_landing_reference.py"

HEADER = f"""# Vendor file formats (landing CSV)

Generated from `contracts/landing/*.yaml` by `{COMMAND}`; do not edit by hand.

Prices, corporate actions, the security master and index rosters are not the SEC's: a vendor's
files are dropped into `$FINDATA_HOME/landing/<folder>/` as CSV, in the layout below or in one of
the publishers' layouts listed under it. A file that breaks a rule is refused whole, naming the
file, the line and the rule (`findata landing check` prints it). Dates are `YYYY-MM-DD`; the first
line names the columns; an empty cell is a missing value.
"""


def _rules(column: Column) -> str:
    rules = []
    if column.min is not None:
        rules.append(f"{'>' if column.exclusive_min else '>='} {column.min:g}")
    if column.allowed:
        rules.append("one of " + ", ".join(f"`{a}`" for a in column.allowed))
    if column.pattern:
        rules.append(f"matches `{column.pattern}`")
    return "; ".join(rules)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def format_section(contract: LandingFormat) -> list[str]:
    """One format's section."""
    lines = [
        f"## {contract.name}",
        "",
        _cell(contract.description),
        "",
        f"Files: `landing/{contract.files}` ({contract.encoding}). One row per "
        + ", ".join(f"`{k}`" for k in contract.key)
        + ".",
        "",
        "| column | type | required | rules | meaning |",
        "|---|---|---|---|---|",
    ]
    for column in contract.columns:
        lines.append(
            f"| `{column.name}` | {column.type} | {'yes' if column.required else 'no'} | "
            f"{_cell(_rules(column))} | {_cell(column.description)} |"
        )
    lines.append("")
    rules = ["`" + " <= ".join(ordered) + "` on every row" for ordered in contract.ordered] + [
        f"`{rule.column}` required where "
        + ", ".join(f"`{k}` is `{v}`" for k, v in rule.when.items())
        for rule in contract.required_when
    ]
    if rules:
        lines += ["Row rules: " + "; ".join(rules) + ".", ""]
    for layout in contract.alternate_layouts:
        lines += [
            f"Also accepted, **{layout.name}**: {_cell(layout.description)} Recognised by the "
            "columns " + ", ".join(f"`{c}`" for c in layout.detect) + "."
        ]
        changes = [f"`{old}` read as `{new}`" for old, new in layout.rename.items()]
        changes += [f"`{c}` not read" for c in layout.drop]
        changes += [f"`{c}` may be empty" for c in layout.nullable]
        if layout.key:
            changes.append("one row per " + ", ".join(f"`{k}`" for k in layout.key))
        if changes:
            lines[-1] += " " + "; ".join(changes) + "."
        lines.append("")
    example = EXAMPLES / f"{contract.name}.csv"
    lines += [
        f"Example ([`docs/examples/landing/{example.name}`](examples/landing/{example.name})):",
        "",
        "```csv",
        example.read_text(encoding="utf-8").rstrip("\n"),
        "```",
        "",
    ]
    return lines


def render() -> str:
    """The reference's text."""
    lines = [HEADER]
    for name in landing_format_names():
        lines += format_section(load_landing_format(name))
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the reference, or with ``--check`` say whether it is up to date (exit 1 if not)."""
    return generator_main(
        argv,
        description=__doc__.splitlines()[0],
        folder=OUTPUT.parent,
        render=lambda: {OUTPUT.name: render()},
        command=COMMAND,
    )


if __name__ == "__main__":
    sys.exit(main())
