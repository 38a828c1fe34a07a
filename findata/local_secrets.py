"""Server secrets kept under ``$FINDATA_HOME/secrets`` when no setting gives one.

One host's processes (API workers, the webhook worker, the CLI) must agree on such a secret, so
the first process to need it writes it and every other one reads that file. Several hosts must
share a configured value instead (each setting that uses this says so).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from findata.settings import Settings


def local_secret(home: Path, name: str, size: int = 32) -> bytes:
    """The random secret ``name`` of this host (``size`` bytes), created on first use."""
    path = home / "secrets" / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        candidate = path.with_name(f".{name}.{os.getpid()}")
        candidate.write_bytes(secrets.token_bytes(size))
        candidate.chmod(0o600)
        try:
            os.link(candidate, path)  # first writer wins; the others read its secret
        except FileExistsError:
            pass
        finally:
            candidate.unlink()
    return path.read_bytes()


def dashboard_secret(settings: Settings) -> bytes:
    """Signs dashboard sessions and e-mail links: the configured secret (the same on every
    host), else this host's own. Here, not beside the dashboard: ``findata demo`` signs the demo
    account in without importing the web stack."""
    if settings.dashboard_secret:
        return settings.dashboard_secret.encode()
    return local_secret(settings.home_dir, "dashboard.key")
