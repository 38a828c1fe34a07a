"""The ``findata`` console script run as a user runs it, on one control plane (the CLI tests
share it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

FINDATA = Path(sys.executable).parent / "findata"


class Cli:
    """The console script on one control plane."""

    def __init__(self, home: Path, database_url: str | None) -> None:
        self.env = {**os.environ, "FINDATA_HOME": str(home)}
        self.env.pop("FINDATA_DATABASE_URL", None)
        if database_url:
            self.env["FINDATA_DATABASE_URL"] = database_url
        self.url = database_url or f"sqlite:///{home.resolve() / 'control.sqlite'}"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(FINDATA), *args], env=self.env, capture_output=True, text=True, timeout=120
        )

    def json(self, *args: str) -> dict[str, Any]:
        result = self.run(*args)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)
