"""Provider settings for the command line and the gateway: flags > environment > config file.

``load_settings`` merges the three sources into a frozen :class:`KnowledgeSettings`;
:func:`deerflow.knowledge.providers.build_provider` turns it into a provider. Which settings there
are, and where each comes from, is the table in :mod:`deerflow.knowledge._provider_settings`.
API keys never appear in a ``repr``, in :meth:`KnowledgeSettings.describe` or in an error message.
This module reads the environment and the config file, and imports no provider.

Environment variables: ``DEERFLOW_KNOWLEDGE_PROVIDER``, ``DEERFLOW_KNOWLEDGE_INDEX``,
``LIGHTRAG_BASE_URL``, ``LIGHTRAG_API_KEY``, ``LIGHTRAG_MODE``, ``RAGFLOW_BASE_URL``,
``RAGFLOW_API_KEY``, ``RAGFLOW_DATASETS`` (comma-separated dataset ids).

Config file (TOML; every key optional)::

    provider = "local"            # local | lightrag | ragflow

    [local]
    index = ".deerflow-knowledge/index.sqlite"   # relative to this file
    dataset_name = "Handbook"     # shown as the dataset of every local hit; unset by default

    [lightrag]
    base_url = "http://localhost:9621"
    api_key = "..."
    mode = "mix"

    [ragflow]
    base_url = "http://localhost:9380"
    api_key = "..."
    datasets = ["<dataset id>", "<dataset id>"]
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Final

from deerflow.knowledge._provider_errors import SettingsError
from deerflow.knowledge._provider_settings import (
    DEFAULT_INDEX_PATH,
    ENV_INDEX,
    ENV_PROVIDER,
    LOCAL,
    PROVIDER_NAMES,
    PROVIDERS,
    ProviderName,
    Setting,
    unknown_provider,
)

__all__ = [
    "DEFAULT_INDEX_PATH",
    "ENV_INDEX",
    "ENV_PROVIDER",
    "PROVIDER_NAMES",
    "KnowledgeSettings",
    "ProviderName",
    "load_settings",
]

#: setting name -> (config table, key, environment variable), from the table of provider settings
_SOURCES: Final[dict[str, tuple[str | None, str, str]]] = {
    "provider": (None, "provider", ENV_PROVIDER),
    **{s.field: (row.name, s.key, s.env) for row in PROVIDERS for s in row.settings},
}
_SETTINGS: Final[dict[str, Setting]] = {s.field: s for row in PROVIDERS for s in row.settings}
_SECRET_FIELDS: Final = frozenset(name for name, s in _SETTINGS.items() if s.secret)
_TABLES: Final = frozenset(PROVIDER_NAMES)


@dataclass(frozen=True)
class KnowledgeSettings:
    """Resolved settings. ``None`` means "not configured": the provider's own default applies."""

    provider: str = LOCAL
    index_path: Path = DEFAULT_INDEX_PATH
    local_dataset_name: str | None = None
    lightrag_base_url: str | None = None
    lightrag_api_key: str | None = field(default=None, repr=False)
    lightrag_mode: str | None = None
    ragflow_base_url: str | None = None
    ragflow_api_key: str | None = field(default=None, repr=False)
    ragflow_datasets: tuple[str, ...] = ()

    def describe(self) -> dict[str, str]:
        """The settings as display strings; a configured API key shows as ``<set>``."""
        shown: dict[str, str] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if value is None or value == ():
                continue
            if item.name in _SECRET_FIELDS:
                shown[item.name] = "<set>"
            elif isinstance(value, tuple):
                shown[item.name] = ", ".join(value)
            else:
                shown[item.name] = str(value)
        return shown


def load_settings(
    *,
    config_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> KnowledgeSettings:
    """Merge settings: ``overrides`` (flags; ``None`` = not given) > ``environ`` > config file.

    ``environ`` defaults to ``os.environ``; an empty variable counts as unset. Raises
    :class:`SettingsError` for an unreadable or invalid config file or an unknown setting.
    """
    unknown = set(overrides) - set(_SOURCES)
    if unknown:
        raise ValueError(f"unknown settings: {sorted(unknown)}")
    env = os.environ if environ is None else environ
    config = _read_config(Path(config_file)) if config_file is not None else {}
    values: dict[str, Any] = {}
    for name, (table, key, variable) in _SOURCES.items():
        value = overrides.get(name)
        if value is None or value == ():
            value = env.get(variable) or None
        if value is None:
            section = config if table is None else config.get(table, {})
            value = section.get(key)
        if value is not None:
            values[name] = _coerce(name, value)
    settings = replace(KnowledgeSettings(), **values)
    if settings.provider not in PROVIDER_NAMES:
        raise SettingsError(unknown_provider(settings.provider))
    return settings


def _read_config(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            config = tomllib.load(handle)
    except OSError as exc:
        raise SettingsError(
            f"Cannot read config file {path} ({exc.strerror or type(exc).__name__}).",
        ) from None
    except tomllib.TOMLDecodeError as exc:
        # The decoder's message names a line and column, never the value (which may be a key).
        raise SettingsError(f"Config file {path} is not valid TOML ({exc}).") from None
    known_top = {"provider"} | _TABLES
    extra = [key for key in config if key not in known_top]
    for table in _TABLES & set(config):
        if not isinstance(config[table], dict):
            extra.append(table)
            continue
        allowed = {key for t, key, _ in _SOURCES.values() if t == table}
        extra += [f"{table}.{key}" for key in config[table] if key not in allowed]
    if extra:
        raise SettingsError(
            f"Config file {path} has unknown or misplaced keys: {', '.join(sorted(extra))}."
        )
    for row in PROVIDERS:  # a path is relative to the config file, not the cwd
        for setting in row.settings:
            value = config.get(row.name, {}).get(setting.key)
            if setting.kind == "path" and isinstance(value, str) and value.strip():
                config[row.name][setting.key] = str(path.parent / Path(value).expanduser())
    return config


def _coerce(name: str, value: Any) -> Any:
    def bad(expected: str) -> SettingsError:
        label = _SOURCES[name][1]
        return SettingsError(f"Invalid setting {label}: expected {expected}.")

    kind = _SETTINGS[name].kind if name in _SETTINGS else "text"
    if kind == "path":
        if not isinstance(value, str | os.PathLike) or not str(value).strip():
            raise bad("a file path")
        return Path(value).expanduser()
    if kind == "list":
        if isinstance(value, str):
            items = [item.strip() for item in value.split(",")]
        elif isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
            items = [item.strip() for item in value]
        else:
            raise bad(f"a list of {_SETTINGS[name].items}")
        return tuple(item for item in items if item)
    if not isinstance(value, str):
        raise bad("a string")
    return value
