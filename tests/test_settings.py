"""Knowledge settings: flags over environment over config file; errors name the setting."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deerflow.knowledge.providers import build_provider
from deerflow.knowledge.providers.errors import SettingsError
from deerflow.knowledge.settings import KnowledgeSettings, load_settings

SECRET = "sk-CLI-SECRET-MARKER-7c1d"


def test_settings_precedence_and_redaction(tmp_path: Path) -> None:
    config = tmp_path / "k.toml"
    config.write_text(
        'provider = "lightrag"\n[lightrag]\nbase_url = "http://config:1"\nmode = "naive"\n'
        f'api_key = "{SECRET}"\n[local]\nindex = "from-config.sqlite"\n'
    )
    env = {"LIGHTRAG_BASE_URL": "http://env:2", "RAGFLOW_DATASETS": "a, b,,c"}
    settings = load_settings(config_file=config, environ=env)
    assert settings.provider == "lightrag"
    assert settings.lightrag_base_url == "http://env:2"
    assert settings.lightrag_mode == "naive"
    assert settings.index_path == tmp_path / "from-config.sqlite"  # relative to the file
    assert settings.ragflow_datasets == ("a", "b", "c")
    flagged = load_settings(config_file=config, environ=env, provider="local", index_path=None)
    assert flagged.provider == "local"
    assert SECRET not in repr(settings) and SECRET not in str(settings.describe())
    assert settings.describe()["lightrag_api_key"] == "<set>"
    provider = build_provider("lightrag", settings)
    assert SECRET not in repr(provider)
    assert build_provider("local", KnowledgeSettings()).name == "local"


def _readme() -> str:
    return (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_the_readme_documents_every_environment_variable() -> None:
    from deerflow.knowledge.settings import _SOURCES

    for _, key, variable in _SOURCES.values():
        assert re.search(rf"^\| `{variable}` \| [^|]*{key}", _readme(), re.M), variable


def test_the_readme_config_file_example_loads(tmp_path: Path) -> None:
    (example,) = re.findall(r"^```toml\n(.*?)^```", _readme(), re.S | re.M)
    config = tmp_path / "knowledge.toml"
    config.write_text(example, encoding="utf-8")
    settings = load_settings(config_file=config, environ={})
    assert settings.provider == "lightrag"
    assert settings.index_path == tmp_path / ".deerflow-knowledge" / "index.sqlite"
    assert settings.lightrag_mode == "mix"
    assert settings.ragflow_datasets == ("<dataset id>", "<dataset id>")
    assert build_provider("lightrag", settings).name == "lightrag"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('provider = "solr"\n', "Unknown provider"),
        ("provider = \n", "is not valid TOML"),
        ('[lightrag]\nbase_ulr = "http://x"\n', "lightrag.base_ulr"),
        ("[local]\nindex = 3\n", "Invalid setting index"),
    ],
)
def test_bad_settings_are_settings_errors(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "k.toml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError, match=message) as info:
        load_settings(config_file=config, environ={})
    assert info.value.provider == "settings"


def test_an_unreadable_config_file_is_a_settings_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="Cannot read config file"):
        load_settings(config_file=tmp_path / "missing.toml", environ={})


def test_the_table_of_provider_settings_is_the_settings_fields() -> None:
    from dataclasses import fields

    from deerflow.knowledge._provider_settings import PROVIDER_NAMES, PROVIDERS

    assert tuple(row.name for row in PROVIDERS) == PROVIDER_NAMES
    table = [setting.field for row in PROVIDERS for setting in row.settings]
    assert len(table) == len(set(table))
    assert ["provider", *table] == [item.name for item in fields(KnowledgeSettings)]
    secret = {s.field for row in PROVIDERS for s in row.settings if s.secret}
    assert secret == {item.name for item in fields(KnowledgeSettings) if not item.repr}


def test_an_unknown_provider_name_is_a_settings_error() -> None:
    with pytest.raises(SettingsError, match=r"Unknown provider 'solr': expected one of local,"):
        build_provider("solr", KnowledgeSettings())
