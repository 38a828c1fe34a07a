"""``api/query.py``: the SQL dialect is whole before any request thread builds SQL."""

from __future__ import annotations

import subprocess
import sys


def test_the_duckdb_dialect_is_loaded_when_the_app_is_imported() -> None:
    # sqlglot registers a dialect class before it sets its generator: a request thread that
    # loaded "duckdb" beside another got ``:name`` placeholders, and the SQL built once per
    # shape kept them (500s on a worker's first concurrent requests). A fresh interpreter, so
    # that no other test loaded the dialect first.
    probe = (
        "import sys, findata.api.app; "
        "print('sqlglot.dialects.duckdb' in sys.modules); "
        "from sqlglot import exp; "
        "print(exp.column('a').eq(exp.Placeholder(this='x')).sql(dialect='duckdb'))"
    )
    printed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert printed[:2] == ["True", "a = $x"]
