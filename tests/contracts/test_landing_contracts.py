"""Every landing CSV format has a valid contract, and the contracts reject inconsistent files."""

from __future__ import annotations

import pytest
import yaml
from pydantic import ValidationError

from findata.contracts.landing import (
    LANDING_DIR,
    LandingFormat,
    landing_format_names,
    load_landing_format,
)


def test_each_csv_landing_format_has_a_contract() -> None:
    assert landing_format_names() == [
        "corporate_actions",
        "index_membership",
        "prices",
        "security_master",
    ]


@pytest.mark.parametrize("name", landing_format_names())
def test_contract_is_consistent(name: str) -> None:
    contract = load_landing_format(name)
    assert contract.name == name
    assert set(contract.key) <= set(contract.column_names)
    assert contract.files.startswith(f"{name}/")
    for layout in contract.alternate_layouts:
        renamed = set(layout.rename.values())
        assert renamed <= set(contract.column_names), (layout.name, renamed)


def test_a_rule_naming_an_unknown_column_is_refused() -> None:
    raw = yaml.safe_load((LANDING_DIR / "prices.yaml").read_text())
    raw["ordered"].append(["low", "typo"])
    with pytest.raises(ValidationError, match="typo"):
        LandingFormat.model_validate(raw)


def test_an_unknown_key_in_a_contract_is_refused() -> None:
    raw = yaml.safe_load((LANDING_DIR / "prices.yaml").read_text())
    raw["columns"][0]["nullable_sometimes"] = True
    with pytest.raises(ValidationError):
        LandingFormat.model_validate(raw)
