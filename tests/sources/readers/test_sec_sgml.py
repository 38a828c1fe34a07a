"""EDGAR full-submission text envelope, on the real LTS One 13F-HR submission."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.sec_sgml import read_submission_text

LTS_TXT = (
    Path(__file__).resolve().parents[2]
    / "fixtures/13f/lts-one-management_2023q3/0001894188-23-000007.txt"
)


def test_header_fields() -> None:
    submission = read_submission_text(LTS_TXT)
    assert submission.accession == "0001894188-23-000007"
    assert submission.submission_type == "13F-HR"
    assert submission.period_of_report == dt.date(2023, 9, 30)
    assert submission.filed == dt.date(2023, 11, 14)
    assert submission.header["PUBLIC DOCUMENT COUNT"] == "2"
    assert submission.header["CENTRAL INDEX KEY"] == "0001894188"
    assert submission.header["COMPANY CONFORMED NAME"] == "LTS One Management LP"


def test_documents_and_their_xml() -> None:
    documents = read_submission_text(LTS_TXT).documents
    assert [(d.type, d.sequence, d.filename) for d in documents] == [
        ("13F-HR", 1, "primary_doc.xml"),
        ("INFORMATION TABLE", 2, "index.xml"),
    ]
    assert all(d.is_xml for d in documents)
    assert documents[0].content.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    assert documents[0].content.endswith(b"</edgarSubmission>")
    assert documents[1].content.endswith(b"</ns1:informationTable>")
    assert documents[1].content.count(b"<ns1:infoTable>") == 14


def test_crlf_line_endings_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "crlf.txt"
    path.write_bytes(LTS_TXT.read_bytes().replace(b"\n", b"\r\n"))
    submission = read_submission_text(path)
    assert submission.accession == "0001894188-23-000007"
    assert submission.filed == dt.date(2023, 11, 14)
    assert [d.filename for d in submission.documents] == ["primary_doc.xml", "index.xml"]


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (b"<SEC-HEADER>", b"<HEADER>", "SEC-HEADER"),
        (b"0001894188-23-000007\n", b"1894188-23-7\n", "ACCESSION NUMBER"),
        (b"FILED AS OF DATE:\t\t20231114", b"FILED AS OF DATE:\t\t2023-11-14", "YYYYMMDD"),
        (b"<DOCUMENT>", b"<DOC>", "no <DOCUMENT>"),
    ],
)
def test_rejects_broken_envelopes(tmp_path: Path, old: bytes, new: bytes, problem: str) -> None:
    data = LTS_TXT.read_bytes()
    assert old in data
    path = tmp_path / "broken.txt"
    path.write_bytes(data.replace(old, new))
    with pytest.raises(MalformedFileError, match=problem) as error:
        read_submission_text(path)
    assert error.value.path == str(path)
