"""Reader for SEC companyfacts JSON (``data.sec.gov/api/xbrl/companyfacts``): one row per fact.

The file nests ``facts -> taxonomy -> tag -> {label, description, units -> unit -> [fact]}``.
Every fact becomes one row; nothing is de-duplicated, because (see data/real/SOURCES.md):

* ``fy``/``fp``/``form`` are those of the *filing* that reported the fact, not of the period
  (Marvell's quarter ending 2020-05-02 comes with fy 2022, fp Q1);
* the same (tag, unit, start, end) is reported again by later filings, sometimes with a
  different value (a restatement, or a rounded re-statement in an 8-K); each report is a
  point-in-time observation, so all are kept and ``filed`` says when each became known;
* companyfacts leaves out dimensional facts (per-class shares outstanding, segments).

``frame`` (e.g. ``CY2021Q4I``) is present only on the fact SEC chose for a calendar frame;
absent gives null. Proxy and fee facts (``DEF 14A``, ``424B2``) carry no ``fy``/``fp``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd

from findata.sources.readers.coerce import dates_column, pad_cik, parse_iso_date
from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.json_file import load_json_object

#: returned columns and their dtypes, in order
COMPANYFACTS_DTYPES: dict[str, str] = {
    "cik": "string",
    "entity_name": "string",
    "taxonomy": "string",
    "tag": "string",
    "label": "string",
    "unit": "string",
    "start": "datetime64[s]",
    "end": "datetime64[s]",
    "value": "float64",
    "accession": "string",
    "fy": "Int64",
    "fp": "string",
    "form": "string",
    "filed": "datetime64[s]",
    "frame": "string",
}

_DATE_COLUMNS = ("start", "end", "filed")


def read_companyfacts(path: str | Path) -> pd.DataFrame:
    """Read a companyfacts file into one row per reported fact (columns: COMPANYFACTS_DTYPES).

    Columns: cik (10-digit string), entity_name, taxonomy, tag, label, unit (string),
    start (date, null for instant facts), end (date), value (float64), accession (string),
    fy (Int64, null when SEC gives none), fp, form (string), filed (date), frame (string, null
    when absent). Rows keep the file's order. Raises :class:`MalformedFileError`.
    """
    path = Path(path)
    document = load_json_object(path)
    cik = _cik_of(path, _required(path, document, "cik", "cik"))
    entity_name = document.get("entityName")
    if entity_name is not None and not isinstance(entity_name, str):
        raise MalformedFileError(path, f"entityName is not a string: {entity_name!r}")
    facts = _required(path, document, "facts", "facts")
    if not isinstance(facts, dict):
        raise MalformedFileError(path, "'facts' is not an object")
    columns = _collect_facts(path, facts)
    rows = len(columns["value"])
    columns["cik"] = [cik] * rows
    columns["entity_name"] = [entity_name or None] * rows
    return _typed_frame(columns)


def _required(path: Path, mapping: dict[str, Any], key: str, where: str) -> Any:
    if key not in mapping:
        raise MalformedFileError(path, f"missing required key '{where}'")
    return mapping[key]


def _cik_of(path: Path, value: Any) -> str:
    # SEC writes the CIK as a JSON number here (1652044), in the file name padded
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise MalformedFileError(path, f"cik is not a CIK: {value!r}")
    try:
        return pad_cik(value)
    except ValueError as error:
        raise MalformedFileError(path, f"cik is not a CIK: {value!r}") from error


def _collect_facts(path: Path, facts: dict[str, Any]) -> dict[str, list[Any]]:
    """Walk taxonomy/tag/unit and append each fact's fields to plain column lists."""
    columns: dict[str, list[Any]] = {name: [] for name in COMPANYFACTS_DTYPES}
    for taxonomy, tags in facts.items():
        if not isinstance(tags, dict):
            raise MalformedFileError(path, f"facts.{taxonomy} is not an object")
        for tag, concept in tags.items():
            where = f"facts.{taxonomy}.{tag}"
            if not isinstance(concept, dict):
                raise MalformedFileError(path, f"{where} is not an object")
            label = concept.get("label")
            if label is not None and not isinstance(label, str):
                raise MalformedFileError(path, f"{where}.label is not a string: {label!r}")
            units = _required(path, concept, "units", f"{where}.units")
            if not isinstance(units, dict):
                raise MalformedFileError(path, f"{where}.units is not an object")
            for unit, unit_facts in units.items():
                if not isinstance(unit_facts, list):
                    raise MalformedFileError(path, f"{where}.units.{unit} is not an array")
                for index, fact in enumerate(unit_facts):
                    _append_fact(path, columns, fact, f"{where}.units.{unit}[{index}]")
                count = len(unit_facts)
                columns["taxonomy"].extend([taxonomy] * count)
                columns["tag"].extend([tag] * count)
                columns["label"].extend([label] * count)
                columns["unit"].extend([unit] * count)
    return columns


def _append_fact(path: Path, columns: dict[str, list[Any]], fact: Any, where: str) -> None:
    if not isinstance(fact, dict):
        raise MalformedFileError(path, f"{where} is not an object: {fact!r}")
    value = _required(path, fact, "val", f"{where}.val")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedFileError(path, f"{where}.val is not a number: {value!r}")
    fy = fact.get("fy")
    if fy is not None and (isinstance(fy, bool) or not isinstance(fy, int)):
        raise MalformedFileError(path, f"{where}.fy is not a year: {fy!r}")
    columns["value"].append(float(value))
    columns["fy"].append(fy)
    columns["start"].append(_date_of(path, fact.get("start"), f"{where}.start"))
    columns["end"].append(_required_date(path, fact, "end", where))
    columns["filed"].append(_required_date(path, fact, "filed", where))
    columns["accession"].append(_required_text(path, fact, "accn", where))
    columns["form"].append(_required_text(path, fact, "form", where))
    columns["fp"].append(_optional_text(path, fact, "fp", where))
    columns["frame"].append(_optional_text(path, fact, "frame", where))


def _date_of(path: Path, value: Any, where: str) -> dt.date | None:
    if value is not None and not isinstance(value, str):
        raise MalformedFileError(path, f"{where} is not a date: {value!r}")
    try:
        return parse_iso_date(value)
    except ValueError as error:
        raise MalformedFileError(path, f"{where} is not a date: {value!r}") from error


def _required_date(path: Path, fact: dict[str, Any], key: str, where: str) -> dt.date:
    parsed = _date_of(path, _required(path, fact, key, f"{where}.{key}"), f"{where}.{key}")
    if parsed is None:
        raise MalformedFileError(path, f"{where}.{key} is blank")
    return parsed


def _required_text(path: Path, fact: dict[str, Any], key: str, where: str) -> str:
    text = _optional_text(path, fact, key, where)
    if text is None:
        raise MalformedFileError(path, f"missing required key '{where}.{key}' (or it is blank)")
    return text


def _optional_text(path: Path, fact: dict[str, Any], key: str, where: str) -> str | None:
    value = fact.get(key)
    if value is not None and not isinstance(value, str):
        raise MalformedFileError(path, f"{where}.{key} is not a string: {value!r}")
    return value or None


def _typed_frame(columns: dict[str, list[Any]]) -> pd.DataFrame:
    frame: dict[str, pd.Series] = {}
    for name, dtype in COMPANYFACTS_DTYPES.items():
        if name in _DATE_COLUMNS:
            frame[name] = dates_column(columns[name])
        else:
            frame[name] = pd.Series(columns[name], dtype=dtype)
    return pd.DataFrame(frame)
