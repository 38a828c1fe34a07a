"""The Financial Statement Data Sets readers on the real 2009q3 sub.txt and num/pre excerpts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from findata.sources.readers.coerce import DATE_DTYPE
from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.sec_fsds import (
    NUM_COLUMNS,
    PRE_COLUMNS,
    SUB_COLUMNS,
    TIMESTAMP_DTYPE,
    read_fsds_num,
    read_fsds_pre,
    read_fsds_sub,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "fsds" / "2009q3"
SUB = FIXTURES / "sub.txt"
NUM = FIXTURES / "num_excerpt_AAPL-BRK.txt"
PRE = FIXTURES / "pre_excerpt_AAPL-BRK.txt"

ALL_FILES = (
    SUB,
    NUM,
    PRE,
)

APPLE_10Q = "0001193125-09-153165"
BERKSHIRE_10Q = "0001157523-09-005813"


@pytest.fixture(scope="module")
def sub() -> pd.DataFrame:
    return read_fsds_sub(SUB)


@pytest.fixture(scope="module")
def num() -> pd.DataFrame:
    return read_fsds_num(NUM)


@pytest.fixture(scope="module")
def pre() -> pd.DataFrame:
    return read_fsds_pre(PRE)


def test_sub_shape_and_dtypes(sub: pd.DataFrame) -> None:
    assert sub.shape == (435, 36)
    assert list(sub.columns) == list(SUB_COLUMNS)
    assert sub["adsh"].is_unique
    for column in ("changed", "period", "filed"):
        assert str(sub[column].dtype) == DATE_DTYPE
    assert str(sub["accepted"].dtype) == TIMESTAMP_DTYPE
    for column in ("sic", "fy", "nciks"):
        assert str(sub[column].dtype) == "Int64"
    for column in ("wksi", "prevrpt", "detail"):
        assert str(sub[column].dtype) == "boolean"
    for column in ("adsh", "cik", "zipba", "ein", "fye", "aciks", "baph"):
        assert isinstance(sub[column].dtype, pd.StringDtype), column
    assert sub["cik"].str.fullmatch(r"\d{10}").all()


def test_apple_10q_submission_row(sub: pd.DataFrame) -> None:
    (row,) = sub[sub["adsh"] == APPLE_10Q].itertuples()
    assert row.cik == "0000320193"
    assert row.name == "APPLE INC"
    assert row.sic == 3571
    assert row.form == "10-Q"
    assert row.period == pd.Timestamp("2009-06-30")
    assert row.fy == 2009
    assert row.fp == "Q3"
    assert row.filed == pd.Timestamp("2009-07-22")
    # "2009-07-22 16:42:00.0" US Eastern (daylight time) is 20:42 UTC
    assert row.accepted == pd.Timestamp("2009-07-22 20:42:00", tz="UTC")
    assert row.fye == "0930"  # leading zero kept
    assert row.ein == "942404110"
    assert row.zipba == "95014"
    assert row.former == "APPLE COMPUTER INC"
    assert row.changed == pd.Timestamp("1997-08-08")
    assert row.afs == "1-LAF"
    assert bool(row.wksi) is True
    assert not row.prevrpt and not row.detail
    assert row.instance == "aapl-20090627.xml"
    assert row.nciks == 1
    assert pd.isna(row.bas2) and pd.isna(row.aciks)  # empty fields are null


def test_sub_keeps_codes_as_text(sub: pd.DataFrame) -> None:
    medco = sub[sub["adsh"] == "0000950123-09-027011"].iloc[0]
    assert medco["zipba"] == "07417"
    tyco = sub[sub["adsh"] == "0001047469-09-007036"].iloc[0]
    assert tyco["ein"] == "000000000"
    assert pd.isna(tyco["zipba"])
    pseg = sub[sub["adsh"] == "0000930413-09-003976"].iloc[0]
    assert pseg["aciks"] == "1158659 81033"
    assert pseg["nciks"] == 3


def test_sub_blank_fiscal_year_is_null(sub: pd.DataFrame) -> None:
    travelers = sub[sub["adsh"] == "0001104659-09-047320"].iloc[0]
    assert travelers["form"] == "10-Q/A"
    assert pd.isna(travelers["fy"]) and pd.isna(travelers["fp"])
    assert sub["fy"].isna().sum() == 1


def test_num_shape_and_dtypes(num: pd.DataFrame) -> None:
    assert num.shape == (470, 10)
    assert list(num.columns) == list(NUM_COLUMNS)
    assert str(num["ddate"].dtype) == DATE_DTYPE
    assert str(num["qtrs"].dtype) == "Int64"
    assert str(num["value"].dtype) == "float64"
    for column in ("adsh", "segments", "coreg", "footnote", "version"):
        assert isinstance(num[column].dtype, pd.StringDtype), column
    assert set(num["qtrs"]) == {0, 1, 2, 3}
    assert num["coreg"].isna().all()
    assert (num["adsh"] == APPLE_10Q).sum() == 176


def test_apple_num_values(num: pd.DataFrame) -> None:
    apple = num[(num["adsh"] == APPLE_10Q) & (num["ddate"] == pd.Timestamp("2009-06-30"))]
    sales = apple[(apple["tag"] == "SalesRevenueNet") & (apple["qtrs"] == 1)]
    (row,) = sales.itertuples()
    assert row.value == 8337000000.0
    assert row.version == "us-gaap/2008"
    assert row.uom == "USD"
    assert pd.isna(row.segments) and pd.isna(row.coreg) and pd.isna(row.footnote)
    eps = apple[(apple["tag"] == "EarningsPerShareDiluted") & (apple["qtrs"] == 1)]
    assert eps["value"].tolist() == [1.35]


def test_berkshire_segments_and_footnote(num: pd.DataFrame) -> None:
    first = num.iloc[0]
    assert first["adsh"] == BERKSHIRE_10Q
    assert first["tag"] == "SalesRevenueNet"
    assert first["segments"] == "BusinessSegments=SegmentInsuranceAndOther;"
    assert first["value"] == 15587000000.0
    footnotes = num["footnote"].dropna()
    assert len(footnotes) == 1
    assert footnotes.iloc[0].startswith("Average shares outstanding include average Class A")


def test_pre_rows(pre: pd.DataFrame) -> None:
    assert pre.shape == (155, 10)
    assert list(pre.columns) == list(PRE_COLUMNS)
    assert str(pre["report"].dtype) == "Int64" and str(pre["line"].dtype) == "Int64"
    assert str(pre["inpth"].dtype) == "boolean" and str(pre["negating"].dtype) == "boolean"
    assert set(pre["stmt"]) == {"BS", "IS", "CF"}
    net_sales = pre[(pre["adsh"] == APPLE_10Q) & (pre["tag"] == "SalesRevenueNet")]
    (row,) = net_sales.itertuples()
    assert (row.report, row.line, row.stmt, row.rfile) == (1, 3, "IS", "X")
    assert row.plabel == "Net sales"
    assert not row.inpth and not row.negating
    assert pre["negating"].any()


# ---- edge cases and malformed input ----------------------------------------------------


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def _write(tmp_path: Path, name: str, lines: list[str], encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes("\n".join(lines).encode(encoding))
    return path


def test_missing_column_is_malformed(tmp_path: Path) -> None:
    lines = [line.rsplit("\t", 1)[0] for line in _lines(PRE)[:3]]  # drop "negating"
    with pytest.raises(MalformedFileError, match=r"header lacks column.*negating") as caught:
        read_fsds_pre(_write(tmp_path, "pre.txt", lines))
    assert "pre.txt" in caught.value.path


def test_short_line_is_malformed(tmp_path: Path) -> None:
    lines = _lines(NUM)[:5]
    lines[3] = lines[3].rsplit("\t", 1)[0]  # the csv parser would pad this silently
    with pytest.raises(MalformedFileError, match="line 4 has 9 fields, header has 10"):
        read_fsds_num(_write(tmp_path, "num.txt", lines))


def test_long_line_is_malformed(tmp_path: Path) -> None:
    lines = _lines(NUM)[:5]
    lines[2] += "\textra"
    with pytest.raises(MalformedFileError, match="not a tab-separated table"):
        read_fsds_num(_write(tmp_path, "num.txt", lines))


def test_bad_date_names_line_and_column(tmp_path: Path) -> None:
    lines = _lines(NUM)[:5]
    fields = lines[2].split("\t")
    fields[3] = "2009-06-30"
    lines[2] = "\t".join(fields)
    with pytest.raises(MalformedFileError, match="line 3, column ddate: not a yyyymmdd date"):
        read_fsds_num(_write(tmp_path, "num.txt", lines))


def test_bad_number_names_line_and_column(tmp_path: Path) -> None:
    lines = _lines(NUM)[:5]
    fields = lines[4].split("\t")
    fields[8] = "1,000"
    lines[4] = "\t".join(fields)
    with pytest.raises(MalformedFileError, match="line 5, column value: not a number: '1,000'"):
        read_fsds_num(_write(tmp_path, "num.txt", lines))


def test_bad_flag(tmp_path: Path) -> None:
    lines = _lines(PRE)[:3]
    lines[1] = lines[1].rsplit("\t", 1)[0] + "\tyes please"
    with pytest.raises(MalformedFileError, match="column negating: not a 0/1 flag"):
        read_fsds_pre(_write(tmp_path, "pre.txt", lines))


def test_bad_cik(tmp_path: Path) -> None:
    lines = _lines(SUB)[:3]
    fields = lines[1].split("\t")
    fields[1] = "93O835"
    lines[1] = "\t".join(fields)
    with pytest.raises(MalformedFileError, match="column cik: not a CIK: '93O835'"):
        read_fsds_sub(_write(tmp_path, "sub.txt", lines))


def test_latin1_file_is_read(tmp_path: Path) -> None:
    lines = _lines(SUB)[:3]
    fields = lines[1].split("\t")
    fields[2] = "SOCIÉTÉ GÉNÉRALE"
    lines[1] = "\t".join(fields)
    frame = read_fsds_sub(_write(tmp_path, "sub.txt", lines, encoding="latin-1"))
    assert frame["name"].iloc[0] == "SOCIÉTÉ GÉNÉRALE"


def test_utf8_with_bom_is_read(tmp_path: Path) -> None:
    path = tmp_path / "pre.txt"
    path.write_bytes(b"\xef\xbb\xbf" + PRE.read_bytes())
    assert read_fsds_pre(path).shape == (155, 10)


def test_quotes_are_plain_characters(tmp_path: Path) -> None:
    lines = _lines(PRE)[:3]
    fields = lines[1].split("\t")
    fields[8] = '"Cash" and equivalents'
    lines[1] = "\t".join(fields)
    assert read_fsds_pre(_write(tmp_path, "pre.txt", lines))["plabel"].iloc[0] == fields[8]


def test_older_num_layout_without_segments(tmp_path: Path) -> None:
    # SEC's num.txt before the 2024 re-issue: no segments column, coreg before ddate
    order = ["adsh", "tag", "version", "coreg", "ddate", "qtrs", "uom", "value", "footnote"]
    source = [line.split("\t") for line in _lines(NUM)[:4]]
    positions = [source[0].index(name) for name in order]
    lines = ["\t".join(fields[i] for i in positions) for fields in source]
    frame = read_fsds_num(_write(tmp_path, "num.txt", lines))
    assert list(frame.columns) == list(NUM_COLUMNS)
    assert frame["segments"].isna().all()
    assert frame["value"].iloc[0] == 15587000000.0
    assert frame["ddate"].iloc[0] == pd.Timestamp("2009-06-30")


def test_unknown_extra_column_is_kept_as_text(tmp_path: Path) -> None:
    lines = _lines(PRE)[:3]
    lines = [lines[0] + "\tnewcol", lines[1] + "\t007", lines[2] + "\t"]
    frame = read_fsds_pre(_write(tmp_path, "pre.txt", lines))
    assert list(frame.columns) == [*PRE_COLUMNS, "newcol"]
    assert frame["newcol"].tolist()[0] == "007"
    assert pd.isna(frame["newcol"].iloc[1])


def test_blank_key_is_malformed(tmp_path: Path) -> None:
    lines = _lines(NUM)[:4]
    lines[2] = "\t" + lines[2].split("\t", 1)[1]
    with pytest.raises(MalformedFileError, match="line 3, column adsh: blank"):
        read_fsds_num(_write(tmp_path, "num.txt", lines))


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(MalformedFileError, match="empty file"):
        read_fsds_sub(_write(tmp_path, "sub.txt", [""]))
