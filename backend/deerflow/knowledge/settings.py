"""Provider settings for the command line and the gateway: flags > environment > config file.

``load_settings`` merges the three sources into a frozen :class:`KnowledgeSettings`;
``build_provider`` turns it into a :class:`~deerflow.knowledge.contract.RetrievalProvider`.
API keys never appear in a ``repr``, in :meth:`KnowledgeSettings.describe` or in an error message.

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

import importlib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Final, Literal, get_args

from deerflow.knowledge.contract import RetrievalProvider
from deerflow.knowledge.providers.errors import ProviderConfigError, SettingsError

__all__ = [
    "DEFAULT_INDEX_PATH",
    "ENV_INDEX",
    "ENV_PROVIDER",
    "PROVIDER_NAMES",
    "KnowledgeSettings",
    "ProviderName",
    "build_provider",
    "load_settings",
]

ProviderName = Literal["local", "lightrag", "ragflow"]
PROVIDER_NAMES: Final[tuple[str, ...]] = get_args(ProviderName)
DEFAULT_INDEX_PATH: Final = Path(".deerflow-knowledge") / "index.sqlite"
ENV_PROVIDER: Final = "DEERFLOW_KNOWLEDGE_PROVIDER"
ENV_INDEX: Final = "DEERFLOW_KNOWLEDGE_INDEX"

# setting name -> (config table, key, environment variable)
_SOURCES: Final[dict[str, tuple[str | None, str, str]]] = {
    "provider": (None, "provider", ENV_PROVIDER),
    "index_path": ("local", "index", ENV_INDEX),
    "local_dataset_name": ("local", "dataset_name", "DEERFLOW_KNOWLEDGE_DATASET_NAME"),
    "lightrag_base_url": ("lightrag", "base_url", "LIGHTRAG_BASE_URL"),
    "lightrag_api_key": ("lightrag", "api_key", "LIGHTRAG_API_KEY"),
    "lightrag_mode": ("lightrag", "mode", "LIGHTRAG_MODE"),
    "ragflow_base_url": ("ragflow", "base_url", "RAGFLOW_BASE_URL"),
    "ragflow_api_key": ("ragflow", "api_key", "RAGFLOW_API_KEY"),
    "ragflow_datasets": ("ragflow", "datasets", "RAGFLOW_DATASETS"),
}
_SECRET_FIELDS: Final = frozenset({"lightrag_api_key", "ragflow_api_key"})
_TABLES: Final = frozenset({"local", "lightrag", "ragflow"})


@dataclass(frozen=True)
class KnowledgeSettings:
    """Resolved settings. ``None`` means "not configured": the provider's own default applies."""

    provider: str = "local"
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
        raise SettingsError(_unknown_provider(settings.provider))
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
    index = config.get("local", {}).get("index")
    if isinstance(index, str) and index.strip():  # relative to the config file, not the cwd
        config["local"]["index"] = str(path.parent / Path(index).expanduser())
    return config


def _coerce(name: str, value: Any) -> Any:
    def bad(expected: str) -> SettingsError:
        label = _SOURCES[name][1]
        return SettingsError(f"Invalid setting {label}: expected {expected}.")

    if name == "index_path":
        if not isinstance(value, str | os.PathLike) or not str(value).strip():
            raise bad("a file path")
        return Path(value).expanduser()
    if name == "ragflow_datasets":
        if isinstance(value, str):
            items = [item.strip() for item in value.split(",")]
        elif isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
            items = [item.strip() for item in value]
        else:
            raise bad("a list of dataset ids")
        return tuple(item for item in items if item)
    if not isinstance(value, str):
        raise bad("a string")
    return value


def _unknown_provider(name: object) -> str:
    # The bad value is repeated (quoted, so an empty or spaced one shows) to say what was read.
    return f"Unknown provider {str(name)!r}: expected one of {', '.join(PROVIDER_NAMES)}."


def build_provider(name: str, settings: KnowledgeSettings) -> RetrievalProvider:
    """The provider called ``name`` configured from ``settings``.

    Raises :class:`ProviderConfigError` (never echoing a secret) when a setting is invalid or the
    provider is not available in this installation.
    """
    if name == "local":
        from deerflow.knowledge.providers.local import LocalProvider

        return LocalProvider(settings.index_path, dataset_name=settings.local_dataset_name)
    if name == "lightrag":
        from deerflow.knowledge.providers.lightrag import DEFAULT_BASE_URL, LightRAGProvider

        kwargs: dict[str, Any] = {"api_key": settings.lightrag_api_key}
        if settings.lightrag_mode is not None:
            kwargs["mode"] = settings.lightrag_mode
        return LightRAGProvider(settings.lightrag_base_url or DEFAULT_BASE_URL, **kwargs)
    if name == "ragflow":
        try:
            module = importlib.import_module("deerflow.knowledge.providers.ragflow")
        except ModuleNotFoundError as exc:
            if exc.name != "deerflow.knowledge.providers.ragflow":
                raise
            raise ProviderConfigError(
                "The RAGFlow provider is not available in this installation.", provider="ragflow"
            ) from None
        if not settings.ragflow_base_url:
            raise ProviderConfigError(
                "RAGFlow needs a base URL: set RAGFLOW_BASE_URL, --base-url or [ragflow] base_url.",
                provider="ragflow",
            )
        provider: RetrievalProvider = module.RAGFlowProvider(
            settings.ragflow_base_url,
            api_key=settings.ragflow_api_key,
            datasets=list(settings.ragflow_datasets) or None,
        )
        return provider
    raise SettingsError(_unknown_provider(name))
