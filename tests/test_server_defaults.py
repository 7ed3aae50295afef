"""One home for the gateway's defaults: the CLI, the wiring, the app and the run engine read
``GATEWAY_DEFAULTS``, and one function tells a PostgreSQL URL from a SQLite path."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest
import typer

from deerflow.knowledge import cli
from deerflow.knowledge.server import GATEWAY_DEFAULTS, build_config, serve
from deerflow.knowledge.server._defaults import is_postgres_url
from deerflow.knowledge.server.api._app import GatewayConfig
from deerflow.knowledge.server.engine._manager import DEFAULT_RUN_TIMEOUT_SECONDS, RunManager


def _serve_options() -> dict[str, Any]:
    command: Any = typer.main.get_command(cli.app)
    return {p.name: p for p in command.commands["serve"].params if p.name}


def test_the_cli_serves_with_the_gateway_defaults() -> None:
    options = _serve_options()
    assert options["host"].default == GATEWAY_DEFAULTS.host
    assert options["port"].default == GATEWAY_DEFAULTS.port
    assert options["run_timeout"].default == GATEWAY_DEFAULTS.run_timeout
    assert f"(default: {GATEWAY_DEFAULTS.checkpoint})" in options["checkpoint"].help


def test_the_library_uses_the_same_defaults() -> None:
    wiring = inspect.signature(build_config).parameters
    assert wiring["checkpoint"].default == GATEWAY_DEFAULTS.checkpoint
    assert wiring["run_timeout"].default == GATEWAY_DEFAULTS.run_timeout
    served = inspect.signature(serve).parameters
    assert (served["host"].default, served["port"].default) == (
        GATEWAY_DEFAULTS.host,
        GATEWAY_DEFAULTS.port,
    )
    fields = {f.name: f.default for f in dataclasses.fields(GatewayConfig)}
    assert fields["run_timeout"] == GATEWAY_DEFAULTS.run_timeout
    assert GATEWAY_DEFAULTS.run_timeout == DEFAULT_RUN_TIMEOUT_SECONDS
    engine = inspect.signature(RunManager).parameters
    assert engine["run_timeout"].default == GATEWAY_DEFAULTS.run_timeout


def test_the_defaults_are_a_frozen_value() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        GATEWAY_DEFAULTS.port = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("target", "postgres"),
    [
        ("postgres://u@h/db", True),
        ("postgresql://u:p@h:5432/db", True),
        (GATEWAY_DEFAULTS.checkpoint, False),
        (":memory:", False),
        ("postgres.sqlite", False),
        ("./postgresql://not-a-url", False),
        ("", False),
    ],
)
def test_a_target_is_postgres_only_by_its_scheme(target: str, postgres: bool) -> None:
    assert is_postgres_url(target) is postgres
