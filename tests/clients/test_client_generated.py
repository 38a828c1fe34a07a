"""The client's generated module against the contracts: up to date (the generator's check mode
fails on a stale copy) and ruff-clean, one method per endpoint with the contract's parameters on
both clients, every field typed as its dataset contract types it, one exception class per
error code; and the client imports without the server's package."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from findata.contracts.datasets import dataset_names, load_dataset_contract
from findata.contracts.endpoints import endpoint_names, load_endpoint_contract
from findata.contracts.errors import load_errors
from findata_client import AsyncClient, Client, FindataError
from findata_client._generated import ENDPOINTS, ERROR_CLASSES

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "clients" / "python"
GENERATOR = CLIENT / "generate.py"
GENERATED = CLIENT / "findata_client" / "_generated.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=REPO, check=False
    )


def test_the_generated_module_is_up_to_date() -> None:
    result = _run(str(GENERATOR), "--check")
    assert result.returncode == 0, result.stderr


def test_check_mode_fails_on_a_stale_module(tmp_path: Path) -> None:
    stale = tmp_path / "_generated.py"
    stale.write_text(GENERATED.read_text().replace("Daily prices of securities", "Old prices"))
    result = _run(str(GENERATOR), "--check", "--output", str(stale))
    assert result.returncode == 1
    assert "out of date" in result.stderr
    missing = _run(str(GENERATOR), "--check", "--output", str(tmp_path / "absent.py"))
    assert missing.returncode == 1


def test_the_generated_module_is_ruff_clean() -> None:
    for command in (("check",), ("format", "--check")):
        result = _run("-m", "ruff", *command, str(GENERATED), str(GENERATOR))
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("client_class", [Client, AsyncClient])
def test_one_method_per_endpoint_with_the_contract_parameters(client_class: type) -> None:
    for name in endpoint_names():
        contract = load_endpoint_contract(name)
        method = getattr(client_class, name)
        signature = inspect.signature(method)
        expected = {p.name for p in contract.all_parameters if p.name != "api_key"}
        for path in contract.paths:
            expected |= {part[1:-1] for part in path.split("/") if part.startswith("{")}
        assert set(signature.parameters) - {"self"} == expected, name
        assert contract.summary.rstrip(".") in (method.__doc__ or ""), name
        for parameter in contract.all_parameters:
            if parameter.name != "api_key":
                first_words = " ".join(parameter.description.split()[:4])
                assert first_words in " ".join((method.__doc__ or "").split()), (name, parameter)
        body_endpoint = contract.paging.kind == "none" and ENDPOINTS[name].feed is None
        awaited = client_class is AsyncClient and body_endpoint
        assert inspect.iscoroutinefunction(method) is awaited, name


def test_path_values_are_positional() -> None:
    prices = inspect.signature(Client.prices).parameters
    assert prices["tickers"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert prices["entity_id"].kind is inspect.Parameter.KEYWORD_ONLY
    index = inspect.signature(Client.index).parameters
    assert index["index_name"].default is inspect.Parameter.empty  # in every path: required
    assert index["as_of"].kind is inspect.Parameter.KEYWORD_ONLY


def test_endpoint_table_follows_the_contracts() -> None:
    assert set(ENDPOINTS) == set(endpoint_names())
    datasets = {name: load_dataset_contract(name) for name in dataset_names()}
    for name, info in ENDPOINTS.items():
        contract = load_endpoint_contract(name)
        assert info.paths == tuple(contract.paths)
        assert (info.paging, info.default_limit, info.max_limit) == (
            contract.paging.kind,
            contract.paging.default_limit,
            contract.paging.max_limit,
        )
        assert info.key == contract.key
        fields = [*contract.fields.identity, *contract.fields.selectable]
        assert [f.name for f in info.fields] == fields
        own = datasets.get(contract.dataset or "")
        for field in info.fields:
            column = next((c for c in own.columns if c.name == field.name), None) if own else None
            if column is None:
                column = next(
                    (c for d in datasets.values() for c in d.columns if c.name == field.name),
                    None,
                )
            assert field.type == (column.type if column else None), (name, field)
    assert ENDPOINTS["prices"].field_types["date"].type == "DATE"
    assert ENDPOINTS["changes"].feed == "since"


def test_one_exception_class_per_error_code() -> None:
    catalogue = load_errors().errors
    assert set(ERROR_CLASSES) == set(catalogue)
    for code, cls in ERROR_CLASSES.items():
        assert issubclass(cls, FindataError)
        assert code == cls.CODE
        assert catalogue[code].status == cls.STATUS
    assert len(set(ERROR_CLASSES.values())) == len(catalogue)


def test_the_client_imports_without_the_server_package() -> None:
    script = (
        "import sys\n"
        "sys.modules['findata'] = None\n"
        "import findata_client, findata_client.client, findata_client.errors\n"
        "import findata_client.endpoints, findata_client.results, findata_client.transport\n"
        "import findata_client.retry, findata_client.params, findata_client.frames\n"
        "import findata_client.notices, findata_client.calls, findata_client._generated\n"
        "from findata_client.errors import NotFoundError, CursorExpiredError\n"
        "from findata_client.endpoints import ENDPOINTS\n"
        "findata_client.Client(api_key='k', base_url='http://127.0.0.1:9').close()\n"
        "assert 'findata' not in [m.split('.')[0] for m in sys.modules if sys.modules[m]]\n"
        "print('ok')\n"
    )
    result = _run("-c", script)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
