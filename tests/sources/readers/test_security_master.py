"""Security master reader on a small hand-made file in the project's layout (Apple's and
Alphabet's real CIKs, FIGIs and listing venues)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from findata.contracts.landing import load_landing_format
from findata.sources.readers.coerce import DATE_DTYPE
from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.security_master import read_security_master

HEADER = (
    "entity_id,entity_grain,issuer_entity_id,issuer_name,cik,figi,ticker,exchange,share_class,"
    "instrument_type,country,valid_from,valid_to"
)
ROWS = (
    "10,security,1,Apple Inc.,320193,BBG000B9XRY4,AAPL,XNAS,,common,US,1980-12-12,\n"
    "20,security,2,Alphabet Inc.,1652044,BBG009S39JX6,GOOGL,XNAS,A,common,US,2015-10-02,\n"
    "21,security,2,Alphabet Inc.,1652044,BBG009S3NB30,GOOG,XNAS,C,common,US,2015-10-02,\n"
    "2,issuer,2,Alphabet Inc.,0001652044,,GOOG,,,,US,2015-10-02,2015-10-02\n"
)


def test_security_master_types_and_padded_ciks(tmp_path: Path) -> None:
    path = tmp_path / "security_master.csv"
    path.write_text(f"{HEADER}\n{ROWS}", encoding="utf-8")
    frame = read_security_master(path)

    assert list(frame.columns) == load_landing_format("security_master").column_names
    assert frame.attrs["layout"] == "findata"
    assert frame["cik"].tolist() == ["0000320193", "0001652044", "0001652044", "0001652044"]
    assert frame["entity_id"].dtype == "Int64" and frame["issuer_entity_id"].dtype == "Int64"
    assert frame["valid_from"].dtype == DATE_DTYPE and frame["valid_to"].dtype == DATE_DTYPE
    assert frame["valid_to"].isna().tolist() == [True, True, True, False]
    assert frame["share_class"].tolist()[1:3] == ["A", "C"]
    assert pd.isna(frame["share_class"].iloc[0])
    assert frame["figi"].isna().tolist() == [False, False, False, True]  # issuer row: no FIGI


def test_security_row_without_exchange_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "security_master.csv"
    path.write_text(
        f"{HEADER}\n10,security,1,Apple Inc.,320193,BBG000B9XRY4,AAPL,,,common,US,1980-12-12,\n",
        encoding="utf-8",
    )
    with pytest.raises(MalformedFileError) as caught:
        read_security_master(path)
    message = str(caught.value)
    assert "column exchange must have a value when entity_grain is security" in message
    assert "line 2: entity_grain='security', exchange=(empty)" in message


def test_lower_case_country_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "security_master.csv"
    path.write_text(
        f"{HEADER}\n"
        "10,security,1,Apple Inc.,320193,BBG000B9XRY4,AAPL,XNAS,,common,us,1980-12-12,\n",
        encoding="utf-8",
    )
    with pytest.raises(
        MalformedFileError, match=r"column country must match .* line 2: country='us'"
    ):
        read_security_master(path)
