"""Published-dataset contracts: ``contracts/datasets/<name>.yaml``, one per mart.

A contract names the mart's columns and DuckDB types, its key, the checks that must hold before
a version is published (turned into Great Expectations suites), how its rows map to change
feed records, and how its ``data_through`` (the last date its data covers) is found.
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

DATASETS_DIR = Path(__file__).parent / "datasets"

DuckType = Literal["BIGINT", "INTEGER", "DOUBLE", "DATE", "TIMESTAMP", "VARCHAR", "BOOLEAN"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetColumn(_Strict):
    """A mart column: its DuckDB type, whether it may be null, what it means."""

    name: str
    type: DuckType
    nullable: bool = True
    description: str


class DateRange(_Strict):
    """Values of a date column must fall in [min, max] (max may be ``today``)."""

    min: dt.date | None = None
    max: dt.date | Literal["today"] | None = None


class RowRules(_Strict):
    """Rules each row must meet (nulls pass every one of them)."""

    ordered: list[list[str]] = Field(
        default_factory=list, description="Chains non-decreasing along each row (nulls skipped)."
    )
    non_negative: list[str] = Field(default_factory=list)
    positive: list[str] = Field(default_factory=list)
    allowed: dict[str, list[str]] = Field(default_factory=dict)
    date_range: dict[str, DateRange] = Field(default_factory=dict)

    @property
    def columns(self) -> set[str]:
        """Every column the rules name."""
        names = {n for chain in self.ordered for n in chain}
        names |= set(self.non_negative) | set(self.positive)
        return names | set(self.allowed) | set(self.date_range)


class DatasetChecks(RowRules):
    """What must hold before a version with this dataset is published, and what is only
    reported (``warn``)."""

    row_count_min_ratio: float = Field(
        default=0.9,
        gt=0,
        le=1,
        description="A new version keeps at least this share of the previous version's rows.",
    )
    warn: RowRules = Field(
        default_factory=RowRules,
        description="Warning-level rules: a row breaking one is reported (a WARN check result, "
        "the data docs) but does not stop the publish.",
    )


class ChangeFeed(_Strict):
    """How a changed row becomes a change record: its scope, entity and date range."""

    scope: str = Field(description="The record's `scope` (the dataset, or `index` for rosters).")
    entity_column: str = Field(description="Column naming the entity (or index code) changed.")
    date_column: str | None = Field(
        default=None, description="Column whose min/max over changed rows give start and end."
    )
    url_template: str | None = Field(
        default=None,
        description="Where a client re-pulls a record's range: a /v1/ path with {entity}, "
        "{start} and {end} placeholders (empty when open); null: the client re-pulls itself.",
    )


class DataThrough(_Strict):
    """How a version finds the last date a dataset's data covers: the latest of some of its
    date columns over every row, or the date of a dataset built from the same source snapshot.
    Null only when the dataset has no rows."""

    columns: list[str] = Field(
        default_factory=list, description="Date columns; the latest value of any of them."
    )
    same_as: str | None = Field(
        default=None, description="A dataset whose data_through this one shares."
    )
    why: str = Field(description="Why this is the date the data covers.")

    @model_validator(mode="after")
    def _one_way(self) -> DataThrough:
        if bool(self.columns) == (self.same_as is not None):
            raise ValueError("data_through needs either columns or same_as (not both)")
        return self


class Storage(_Strict):
    """How a published version stores the dataset's rows (``findata/published/versions.py``)."""

    recent_year_of: str | None = Field(
        default=None,
        description="A DATE column of append-mostly data: the rows from January 1 of its latest "
        "year are stored apart from the older ones, so a version that changed only recent rows "
        "shares the older ones with the version before it. Null: one part.",
    )


class DatasetContract(_Strict):
    """One published dataset (one mart)."""

    name: str
    description: str
    grain: str = Field(description="What one row is.")
    key: list[str]
    columns: list[DatasetColumn]
    checks: DatasetChecks = Field(default_factory=DatasetChecks)
    change_feed: ChangeFeed
    data_through: DataThrough
    storage: Storage = Field(default_factory=Storage)

    @model_validator(mode="after")
    def _names_exist(self) -> DatasetContract:
        names = {c.name for c in self.columns}
        referenced = set(self.key) | self.checks.columns | self.checks.warn.columns
        referenced |= {self.change_feed.entity_column}
        if self.change_feed.date_column:
            referenced.add(self.change_feed.date_column)
        referenced |= set(self.data_through.columns)
        if self.storage.recent_year_of:
            referenced.add(self.storage.recent_year_of)
        unknown = referenced - names
        if unknown:
            raise ValueError(f"{self.name}: unknown column(s) referenced: {sorted(unknown)}")
        types = {c.name: c.type for c in self.columns}
        dated = [*self.data_through.columns, *filter(None, [self.storage.recent_year_of])]
        undated = [n for n in dated if types[n] != "DATE"]
        if undated:
            raise ValueError(f"{self.name}: date column(s) not of type DATE: {undated}")
        if self.data_through.same_as == self.name:
            raise ValueError(f"{self.name}: data_through cannot be the same as itself")
        nullable_keys = [c.name for c in self.columns if c.name in self.key and c.nullable]
        if nullable_keys:
            raise ValueError(f"{self.name}: key column(s) must not be nullable: {nullable_keys}")
        return self

    @property
    def column_names(self) -> list[str]:
        """Column names in contract order."""
        return [c.name for c in self.columns]


@cache
def load_dataset_contract(name: str) -> DatasetContract:
    """Load and validate ``contracts/datasets/<name>.yaml``."""
    path = DATASETS_DIR / f"{name}.yaml"
    return DatasetContract.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def dataset_names() -> list[str]:
    """Every published dataset that has a contract."""
    return sorted(p.stem for p in DATASETS_DIR.glob("*.yaml"))
