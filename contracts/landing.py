"""Landing-format contracts: the CSV layouts findata accepts, one YAML file each."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

LANDING_DIR = Path(__file__).parent / "landing"

ColumnType = Literal["string", "integer", "number", "date"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Column(_Strict):
    """One CSV column: its type and the rules every value must keep."""

    name: str
    type: ColumnType
    required: bool = False
    description: str = ""
    min: float | None = None
    exclusive_min: bool = False
    allowed: list[str] | None = None
    pattern: str | None = None


class RequiredWhen(_Strict):
    """``column`` must be filled on rows where every ``when`` column has the given value."""

    column: str
    when: dict[str, str]


class AlternateLayout(_Strict):
    """A publisher's layout accepted in place of the project's own."""

    name: str
    description: str
    detect: list[str] = Field(description="Header names whose presence selects this layout.")
    rename: dict[str, str] = Field(default_factory=dict)
    drop: list[str] = Field(default_factory=list)
    nullable: list[str] = Field(
        default_factory=list,
        description="Required columns that this layout cannot fill.",
    )
    key: list[str] | None = Field(
        default=None,
        description="The unique key in this layout, where the format's key has a nullable part.",
    )


class LandingFormat(_Strict):
    """A landing CSV format: columns, key, row rules and accepted publisher layouts."""

    name: str
    description: str
    files: str = Field(description="Glob under $FINDATA_HOME/landing.")
    encoding: str = "utf-8"
    key: list[str]
    columns: list[Column]
    ordered: list[list[str]] = Field(
        default_factory=list,
        description="Column chains that must be non-decreasing along a row (nulls skipped).",
    )
    required_when: list[RequiredWhen] = Field(default_factory=list)
    alternate_layouts: list[AlternateLayout] = Field(default_factory=list)

    @model_validator(mode="after")
    def _names_exist(self) -> LandingFormat:
        names = {c.name for c in self.columns}
        referenced = set(self.key) | {n for chain in self.ordered for n in chain}
        referenced |= {r.column for r in self.required_when}
        referenced |= {k for r in self.required_when for k in r.when}
        for layout in self.alternate_layouts:
            referenced |= set(layout.nullable) | set(layout.key or ())
        unknown = referenced - names
        if unknown:
            raise ValueError(f"{self.name}: unknown column(s) referenced: {sorted(unknown)}")
        return self

    @property
    def column_names(self) -> list[str]:
        """Column names in contract order."""
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        """The column called ``name``."""
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)


@cache
def load_landing_format(name: str) -> LandingFormat:
    """Load and validate ``contracts/landing/<name>.yaml``."""
    path = LANDING_DIR / f"{name}.yaml"
    return LandingFormat.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def landing_format_names() -> list[str]:
    """Every landing format that has a contract file."""
    return sorted(p.stem for p in LANDING_DIR.glob("*.yaml"))
