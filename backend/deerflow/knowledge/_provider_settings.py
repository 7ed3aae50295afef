"""The table of provider settings: which providers exist, and where each of their settings comes from.

:mod:`~deerflow.knowledge.settings` reads it to merge flags, the environment and the config file;
the command line reads it for its provider options; the providers take their names from it. It
is plain data (no I/O, no third-party import), so that every layer may import it, the local
index's reader child included.

Adding a provider is a row here (its name, and each setting's config key, environment variable
and kind), its fields on :class:`~deerflow.knowledge.settings.KnowledgeSettings` (their types),
and its branch in :func:`deerflow.knowledge.providers.build_provider` (its construction);
``tests/test_settings.py`` checks that the first two agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, get_args

__all__ = [
    "DEFAULT_INDEX_PATH",
    "ENV_INDEX",
    "ENV_PROVIDER",
    "LIGHTRAG",
    "LOCAL",
    "PROVIDERS",
    "PROVIDER_NAMES",
    "ProviderName",
    "ProviderSettings",
    "Setting",
    "SettingKind",
    "flag_settings",
    "provider_settings",
    "unknown_provider",
]

ProviderName = Literal["local", "lightrag", "ragflow"]
PROVIDER_NAMES: Final[tuple[ProviderName, ...]] = get_args(ProviderName)
LOCAL: Final[ProviderName] = "local"
LIGHTRAG: Final[ProviderName] = "lightrag"
RAGFLOW: Final[ProviderName] = "ragflow"
ENV_PROVIDER: Final = "DEERFLOW_KNOWLEDGE_PROVIDER"
ENV_INDEX: Final = "DEERFLOW_KNOWLEDGE_INDEX"
DEFAULT_INDEX_PATH: Final = Path(".deerflow-knowledge") / "index.sqlite"

#: How a value is read: ``text`` a string; ``path`` a file path (in the config file, relative to
#: that file); ``list`` a list of strings (in the environment or a flag, comma-separated).
SettingKind = Literal["text", "path", "list"]


@dataclass(frozen=True, slots=True)
class Setting:
    """One provider setting: a :class:`~deerflow.knowledge.settings.KnowledgeSettings` field."""

    field: str
    """The field of ``KnowledgeSettings`` that holds it."""
    key: str
    """Its key in the provider's table of the config file."""
    env: str
    """The environment variable that sets it."""
    kind: SettingKind = "text"
    secret: bool = False
    """Never shown: ``describe()`` says ``<set>``, and no flag sets it (a flag is in ``ps``)."""
    flag: str | None = None
    """The command-line option that sets it, for the providers that take it."""
    items: str = "strings"
    """What a ``list`` holds, as an error message names it."""


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    name: ProviderName
    settings: tuple[Setting, ...]


PROVIDERS: Final = (
    ProviderSettings(
        LOCAL,
        (
            Setting("index_path", "index", ENV_INDEX, kind="path", flag="--index"),
            Setting("local_dataset_name", "dataset_name", "DEERFLOW_KNOWLEDGE_DATASET_NAME"),
        ),
    ),
    ProviderSettings(
        LIGHTRAG,
        (
            Setting("lightrag_base_url", "base_url", "LIGHTRAG_BASE_URL", flag="--base-url"),
            Setting("lightrag_api_key", "api_key", "LIGHTRAG_API_KEY", secret=True),
            Setting("lightrag_mode", "mode", "LIGHTRAG_MODE"),
        ),
    ),
    ProviderSettings(
        RAGFLOW,
        (
            Setting("ragflow_base_url", "base_url", "RAGFLOW_BASE_URL", flag="--base-url"),
            Setting("ragflow_api_key", "api_key", "RAGFLOW_API_KEY", secret=True),
            Setting(
                "ragflow_datasets",
                "datasets",
                "RAGFLOW_DATASETS",
                kind="list",
                flag="--dataset",
                items="dataset ids",
            ),
        ),
    ),
)


def provider_settings(name: str) -> ProviderSettings | None:
    """The row of the provider called ``name``, or None for an unknown name."""
    return next((row for row in PROVIDERS if row.name == name), None)


def flag_settings(flag: str) -> dict[str, Setting]:
    """The setting that the command-line option ``flag`` sets, for each provider that takes it."""
    return {
        row.name: setting for row in PROVIDERS for setting in row.settings if setting.flag == flag
    }


def unknown_provider(name: object) -> str:
    """The message for a provider name not in the table."""
    # The bad value is repeated (quoted, so an empty or spaced one shows) to say what was read.
    return f"Unknown provider {str(name)!r}: expected one of {', '.join(PROVIDER_NAMES)}."
