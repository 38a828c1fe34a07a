"""companyfacts JSON from fact columns: the bytes ``sec_json.companyfacts_json`` writes for the
same facts, without a Python object per fact.

The facts are ordered as SEC orders them with one ``lexsort``, and each fact's JSON object is
put together by Arrow's string kernels from a few parts that many facts share (the period's
dates, the filing's fields, the frame) and its value; only the document around the facts'
arrays (a few concepts per issuer) is written piece by piece.
"""

from __future__ import annotations

import datetime as dt
import functools

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from findata.demo.documents import FactColumns, period_keys, period_of_key
from findata.demo.sec_json import json_number, tag_sort_key, taxonomy_sort_key

#: whole numbers below this are written by Arrow's integer formatting; others one by one
_INT_LIMIT = 2.0**63


def _dumps(value: object) -> str:
    return orjson.dumps(value).decode()


def _ranks(keys: list[object]) -> np.ndarray:
    """Each key's position once the keys are sorted."""
    ranks = np.empty(len(keys), dtype="int64")
    ranks[sorted(range(len(keys)), key=keys.__getitem__)] = np.arange(len(keys))
    return ranks


def _value_texts(values: np.ndarray) -> pa.Array:
    """Each value as ``json_number`` writes it: whole numbers without ``.0``."""
    whole = (values == np.trunc(values)) & (np.abs(values) < _INT_LIMIT)
    texts = pc.cast(pa.array(np.where(whole, values, 0).astype("int64")), pa.string())
    if whole.all():
        return texts
    others, position = np.unique(values[~whole], return_inverse=True)
    other_texts = pa.array([_dumps(json_number(float(v))) for v in others.tolist()])
    index = np.zeros(len(values), dtype="int64")
    index[~whole] = position.reshape(-1)
    return pc.if_else(pa.array(whole), texts, other_texts.take(pa.array(index)))


@functools.cache
def _period_head(key: int) -> str:
    """A fact's JSON up to its value, for the period ``key`` (``period_keys``); the same few
    thousand periods recur in every issuer's facts."""
    start, end = period_of_key(key)
    return (
        "{" if start < 0 else f'{{"start":"{dt.date.fromordinal(start).isoformat()}",'
    ) + f'"end":"{dt.date.fromordinal(end).isoformat()}","val":'


def _fact_texts(facts: FactColumns, order: np.ndarray) -> pa.Array:
    """Each fact's JSON object in ``order``: ``{"start", "end", "val", "accn", "fy", "fp",
    "form", "filed", "frame"}``, ``start`` and ``frame`` left out when the fact has none."""
    periods, period = np.unique(
        period_keys(facts.start[order], facts.end[order]), return_inverse=True
    )
    heads = [_period_head(key) for key in periods.tolist()]
    filings = [
        f',"accn":{_dumps(accession)},"fy":{fy},"fp":{_dumps(fp)},"form":{_dumps(form)}'
        f',"filed":"{filed.isoformat()}"'
        for accession, fy, fp, form, filed in facts.filings
    ]
    tails = ["}", *(f',"frame":{_dumps(frame)}}}' for frame in facts.frames)]
    return pc.binary_join_element_wise(
        pa.array(heads).take(pa.array(period.reshape(-1))),
        _value_texts(facts.value[order]),
        pa.array(filings).take(pa.array(facts.filing[order])),
        pa.array(tails).take(pa.array(facts.frame[order] + 1)),
        "",
    )


def companyfacts_json_from_columns(
    cik: str, entity_name: str, facts: FactColumns, labels: dict[str, tuple[str, str]]
) -> bytes:
    """``companyfacts/CIK##########.json`` for ``facts``: byte for byte what
    ``sec_json.companyfacts_json`` writes for ``CompanyFacts(cik, entity_name, facts.records(),
    labels)``."""
    head = f'{{"cik":{int(cik)},"entityName":{_dumps(entity_name)},"facts":{{'
    if len(facts) == 0:
        return (head + "}}").encode()
    if not np.isfinite(facts.value).all():
        raise ValueError(f"CIK {cik}: a fact value is not a finite number")
    concept_rank = _ranks(
        [
            (taxonomy_sort_key(taxonomy), tag_sort_key(tag), unit)
            for taxonomy, tag, unit in facts.concepts
        ]
    )
    filed = np.array([f[4].toordinal() for f in facts.filings], dtype="int64")
    accession_rank = _ranks([f[0] for f in facts.filings])
    # SEC's order: concept (taxonomy, tag, unit), then end, start (instants first), filing
    fact_rank = concept_rank[facts.concept]
    order = np.lexsort(
        (accession_rank[facts.filing], filed[facts.filing], facts.start, facts.end, fact_rank)
    )
    ranks = fact_rank[order]
    bounds = np.flatnonzero(np.diff(ranks)) + 1
    offsets = np.concatenate([[0], bounds, [len(order)]]).astype("int32")
    arrays = pc.binary_join(
        pa.ListArray.from_arrays(pa.array(offsets), _fact_texts(facts, order)), ","
    ).to_pylist()
    concepts = [facts.concepts[c] for c in facts.concept[order][offsets[:-1]].tolist()]
    parts = [head]
    for k, ((taxonomy, tag, unit), array) in enumerate(zip(concepts, arrays, strict=True)):
        previous = concepts[k - 1] if k else None
        if previous is None or previous[:2] != (taxonomy, tag):
            if previous is not None:
                parts.append("}}," if previous[0] == taxonomy else "}}},")
            if previous is None or previous[0] != taxonomy:
                parts.append(f"{_dumps(taxonomy)}:{{")
            label, description = labels.get(tag, (None, None))
            parts.append(
                f'{_dumps(tag)}:{{"label":{_dumps(label)},"description":{_dumps(description)}'
                ',"units":{'
            )
        else:
            parts.append(",")
        parts.append(f"{_dumps(unit)}:[{array}]")
    parts.append("}}}}}")
    return "".join(parts).encode()
