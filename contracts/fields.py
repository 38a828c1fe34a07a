"""The type of each response field of an endpoint, from the dataset contracts: the column of that
name in the endpoint's own dataset first, then in any dataset (in name order). The OpenAPI
response schemas and the Python client's generated field table both read it."""

from __future__ import annotations

from functools import cache

from findata.contracts.datasets import dataset_names, load_dataset_contract
from findata.contracts.endpoints import EndpointContract

#: a field no dataset names: its type is not known, and it may be null
UNKNOWN: tuple[str | None, bool] = (None, True)


@cache
def dataset_columns() -> dict[str, dict[str, tuple[str, bool]]]:
    """Each dataset's columns: (DuckDB type, nullable) by name, datasets in name order."""
    return {
        name: {c.name: (c.type, c.nullable) for c in load_dataset_contract(name).columns}
        for name in dataset_names()
    }


def field_type(field: str, contract: EndpointContract) -> tuple[str | None, bool]:
    """A response field's (DuckDB type, nullable), or ``UNKNOWN``."""
    columns = dataset_columns()
    order = [contract.dataset] if contract.dataset in columns else []
    order += [name for name in columns if name != contract.dataset]
    for name in order:
        if field in columns[name]:
            return columns[name][field]
    return UNKNOWN
