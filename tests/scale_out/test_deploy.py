"""The deployment folder (``deploy/``), which CI cannot run (no container engine): the compose file
is valid YAML, every findata service runs a command the CLI has, and the settings each role is
given are ``Settings`` fields that validate, including the ones the role cannot do without."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml

from findata.cli import app
from findata.settings import Settings

DEPLOY = Path(__file__).parents[2] / "deploy"
IMAGE = "findata:local"
#: the settings a role cannot run without, by the service's command
NEEDED = {
    ("serve",): {
        "database_url",
        "cache_url",
        "published_url",
        "s3_endpoint_url",
        "cursor_secret",
        "dashboard_secret",
        "mail_secrets_key",
        "webhooks_secrets_key",
        "base_url",
    },
    ("webhooks", "worker"): {"database_url", "webhooks_secrets_key", "base_url"},
    ("refresh",): {"database_url", "published_url", "s3_endpoint_url", "base_url"},
    ("ui",): {"database_url", "published_url", "s3_endpoint_url", "base_url"},
    ("db", "upgrade"): {"database_url"},
}


def _compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def _findata_services() -> dict[str, dict[str, Any]]:
    return {
        name: service
        for name, service in _compose()["services"].items()
        if service.get("image") == IMAGE
    }


def _env_file(path: Path) -> dict[str, str]:
    """``NAME=value`` lines (compose's env-file format, without quotes or interpolation)."""
    pairs = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            pairs[name.strip()] = value
    return pairs


def _environment(service: dict[str, Any]) -> dict[str, str]:
    env: dict[str, str] = {}
    for name in service.get("env_file", []):
        env.update(_env_file(DEPLOY / name))
    env.update(service.get("environment", {}))
    return env


def _subcommand(words: list[str]) -> tuple[str, ...]:
    """The findata subcommand that ``words`` (the arguments after ``findata``) run."""
    command: Any = typer.main.get_command(app)
    path: list[str] = []
    for word in words:
        # a group has subcommands (typer carries a click of its own: no isinstance on click's)
        if not hasattr(command, "list_commands") or word.startswith("-"):
            break
        found = command.get_command(typer.Context(command), word)
        assert found is not None, f"findata has no command {' '.join([*path, word])}"
        command, path = found, [*path, word]
    return tuple(path)


def test_the_compose_file_has_every_role() -> None:
    services = _compose()["services"]
    assert {"postgres", "redis", "minio", "proxy"} <= set(services)
    roles = {_subcommand(s["command"][1:]) for s in _findata_services().values()}
    assert roles == set(NEEDED)


@pytest.mark.parametrize("name", sorted(_findata_services()))
def test_each_role_gets_known_settings_that_validate(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = _findata_services()[name]
    assert service["command"][0] == "findata"
    env = _environment(service)
    given = {key.removeprefix("FINDATA_").lower() for key in env if key.startswith("FINDATA_")}
    unknown = given - set(Settings.model_fields)
    assert not unknown, f"{name}: not findata settings: {unknown}"
    assert NEEDED[_subcommand(service["command"][1:])] <= given, name
    for key in [k for k in os.environ if k.startswith("FINDATA_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    Settings()  # every value parses (URL patterns, lists, numbers)


def test_the_proxy_config_is_the_one_mounted() -> None:
    proxy = _compose()["services"]["proxy"]
    assert "./nginx.conf:/etc/nginx/nginx.conf:ro" in proxy["volumes"]
    config = (DEPLOY / "nginx.conf").read_text()
    assert "server api:8000" in config and "proxy_next_upstream error" in config
