"""The ``use:``-able DeerFlow tools, against DeerFlow's config surface (a stand-in module).

DeerFlow's own backend is exercised in tests/integration/deerflow; here ``deerflow.config`` is a
small module with DeerFlow's ``get_app_config()`` / ``get_tool_config(name)`` / ``tool_output``
shapes, so every rule runs in milliseconds: key names, unknown-key reports, errors as text, and
the budget that fits under DeerFlow's own tool-output budget.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from deerflow.knowledge import find_citations, read_envelope
from deerflow.knowledge.integrations.deerflow import extension, lightrag, local, ragflow
from deerflow.knowledge.integrations.deerflow._host import deerflow_trigger
from deerflow.knowledge.integrations.deerflow._tool import check_entry
from deerflow.knowledge.providers.local import LocalProvider
from deerflow.knowledge.rules import MIN_MAX_CHARS

SECRET = "sk-deerflow-test-secret-0123456789"


@dataclass
class ToolOutput:  # DeerFlow's ToolOutputConfig defaults
    enabled: bool = True
    externalize_min_chars: int = 12_000
    fallback_max_chars: int = 30_000
    exempt_tools: list[str] = field(default_factory=lambda: ["read_file", "read_file_tool"])
    tool_overrides: dict[str, int] = field(default_factory=dict)


class ToolConfig:
    def __init__(self, name: str, use: str, **extra: Any) -> None:
        self.name, self.group, self.use = name, "knowledge", use
        self.model_extra = dict(extra)


class AppConfig:
    path: Path | None = None

    def __init__(self, tools: list[ToolConfig], tool_output: ToolOutput | None = None) -> None:
        self.tools = tools
        self.tool_output = tool_output or ToolOutput()

    def get_tool_config(self, name: str) -> ToolConfig | None:
        return next((tool for tool in self.tools if tool.name == name), None)

    @classmethod
    def resolve_config_path(cls) -> Path:
        assert cls.path is not None
        return cls.path


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Install a ``deerflow.config`` stand-in; returns a setter for the current AppConfig."""
    current: dict[str, AppConfig] = {}
    module = types.ModuleType("deerflow.config")
    module.get_app_config = lambda: current["config"]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "deerflow.config", module)
    AppConfig.path = tmp_path / "config.yaml"

    def configure(*tools: ToolConfig, tool_output: ToolOutput | None = None) -> AppConfig:
        current["config"] = AppConfig(list(tools), tool_output)
        return current["config"]

    return configure


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs = tmp_path_factory.mktemp("docs")
    for n in range(8):
        (docs / f"deer-{n}.md").write_text(
            f"# Deer note {n}\n\n"
            + " ".join(
                f"White-tailed deer {n} eat acorns in autumn, sentence {k}." for k in range(30)
            )
            + "\n",
            encoding="utf-8",
        )
    path = tmp_path_factory.mktemp("index") / "index.sqlite"
    LocalProvider(path).index(docs)
    return path


def _local(**extra: Any) -> ToolConfig:
    return ToolConfig("knowledge_search", local.FLAVOR.use, **extra)


def _call(tool: Any, query: str = "what do deer eat in autumn") -> ToolMessage:
    call = {
        "type": "tool_call",
        "id": "call-1",
        "name": "knowledge_search",
        "args": {"query": query},
    }
    message = asyncio.run(tool.ainvoke(call))
    assert isinstance(message, ToolMessage)
    return message


def test_each_tool_is_a_module_level_content_and_artifact_tool() -> None:
    for module in (local, lightrag, ragflow):
        tool = module.knowledge_search_tool
        assert tool.name == "knowledge_search"
        assert tool.response_format == "content_and_artifact"
        assert tool.metadata == {"knowledge_capabilities": {"operations": ["search", "sources"]}}
        assert set(tool.tool_call_schema.model_fields) == {"query"}
        assert module.FLAVOR.use == f"{module.__name__}:knowledge_search_tool"


def test_outside_deerflow_a_call_is_an_error_not_an_exception() -> None:
    assert "deerflow.config" not in sys.modules
    message = _call(local.knowledge_search_tool)
    assert message.content.startswith("Error: knowledge_search is DeerFlow's tool")
    assert message.artifact is None


def test_missing_entry_is_reported(host: Any) -> None:
    host(ToolConfig("web_search", "x:y"))
    message = _call(local.knowledge_search_tool)
    assert message.content == (
        "Error: knowledge_search is not configured; add its entry to the tools list in config.yaml."
    )


def test_local_tool_reads_deerflow_keys_and_its_evidence_verifies(host: Any, index: Path) -> None:
    host(_local(index=str(index), top_k=3, max_chars_per_chunk=120, max_total_chars=5000))
    message = _call(local.knowledge_search_tool)
    evidence = read_envelope(message.content, message.artifact)
    assert evidence.error is None and not evidence.rejected
    assert len(evidence.sources) == 3  # top_k
    assert all(len(source.excerpt) <= 120 for source in evidence.sources)


def test_relative_index_is_relative_to_config_yaml(host: Any, index: Path) -> None:
    AppConfig.path = index.parent.parent / "config.yaml"
    host(_local(index=f"{index.parent.name}/{index.name}"))
    message = _call(local.knowledge_search_tool)
    assert read_envelope(message.content, message.artifact).sources


@pytest.mark.parametrize("limit", [MIN_MAX_CHARS, 201, 1000, 3000, 12_000, 30_000])
@pytest.mark.parametrize("knob", ["tool_overrides", "fallback_max_chars"])
def test_result_fits_under_deerflows_own_budget(
    host: Any, index: Path, limit: int, knob: str
) -> None:
    """DeerFlow cuts content longer than its trigger and keeps the artifact; a result that fits
    is never cut, so every record on the stored message verifies and every link has evidence."""
    output = ToolOutput()
    if knob == "tool_overrides":
        output.tool_overrides = {"knowledge_search": limit}
    else:
        output.externalize_min_chars, output.fallback_max_chars = 0, limit
    host(_local(index=str(index), top_k=8, max_total_chars=1_000_000), tool_output=output)
    message = _call(local.knowledge_search_tool)
    assert len(message.content) <= limit == deerflow_trigger("knowledge_search", output)
    evidence = read_envelope(message.content, message.artifact)
    assert not evidence.rejected and evidence.error is None
    cited = {c.source_id for c in find_citations(message.content) if c.source_id}
    assert cited == {source.id for source in evidence.sources}
    if limit >= 3000:
        assert len(evidence.sources) >= 2


def test_budget_below_the_smallest_result_is_a_clear_error(host: Any, index: Path) -> None:
    output = ToolOutput(tool_overrides={"knowledge_search": MIN_MAX_CHARS - 1})
    host(_local(index=str(index)), tool_output=output)
    message = _call(local.knowledge_search_tool)
    assert message.artifact is None
    assert message.content.startswith(f"Error: DeerFlow's tool_output budget lets knowledge_search "
                                      f"return only {MIN_MAX_CHARS - 1} characters")  # fmt: skip
    assert "exempt_tools" in message.content


def test_exempt_or_disabled_budget_keeps_the_entrys_own_budget(host: Any, index: Path) -> None:
    for output in (ToolOutput(exempt_tools=["knowledge_search"]), ToolOutput(enabled=False)):
        host(_local(index=str(index), max_total_chars=700), tool_output=output)
        assert deerflow_trigger("knowledge_search", output) is None
        assert len(_call(local.knowledge_search_tool).content) <= 700


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (ToolOutput(), 12_000),
        (ToolOutput(tool_overrides={"knowledge_search": 500}), 500),
        (ToolOutput(tool_overrides={"other": 500}), 12_000),
        (ToolOutput(tool_overrides={"knowledge_search": 0}), 30_000),
        (ToolOutput(externalize_min_chars=0, fallback_max_chars=0), None),
        (ToolOutput(fallback_max_chars=900), 900),
        (None, None),
    ],
)
def test_trigger_mirrors_deerflows_rule(output: ToolOutput | None, expected: int | None) -> None:
    assert deerflow_trigger("knowledge_search", output) == expected


def test_unknown_key_is_reported_once_with_a_suggestion(
    host: Any, index: Path, caplog: pytest.LogCaptureFixture
) -> None:
    host(_local(index=str(index), max_chars=500, top_kk=2))
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            assert read_envelope(*_split(_call(local.knowledge_search_tool))).sources
    warnings = [
        r.getMessage() for r in caplog.records if "is not one of its settings" in r.getMessage()
    ]
    assert len(warnings) == 2
    assert (
        "'max_chars' is not one of its settings and is ignored; did you mean 'max_total_chars'?"
        in warnings[0]
    )
    assert "'top_kk'" in warnings[1] and "did you mean 'top_k'?" in warnings[1]


def _split(message: ToolMessage) -> tuple[Any, Any]:
    return message.content, message.artifact


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ({"top_k": 0}, "Invalid local limit"),
        ({"top_k": "3"}, "Invalid local limit"),
        ({"index": ""}, "Invalid local index"),
        ({"max_total_chars": 199}, "max_chars must be between 200"),
        ({"max_total_chars": "8000"}, "max_total_chars must be an integer"),
        ({"max_chars_per_chunk": 0}, "max_chars_per_hit must be between 1"),
    ],
)
def test_bad_local_settings_are_errors(host: Any, index: Path, extra: Any, fragment: str) -> None:
    host(_local(**({"index": str(index)} | extra)))
    message = _call(local.knowledge_search_tool)
    assert message.content.startswith("Error: ") and fragment in message.content
    assert message.artifact is None


def test_missing_index_is_an_error(host: Any, tmp_path: Path) -> None:
    host(_local(index=str(tmp_path / "absent.sqlite")))
    message = _call(local.knowledge_search_tool)
    assert message.content.startswith("Error: ") and message.artifact is None


def test_lightrag_bad_settings_and_unreachable_server_never_raise_or_leak(host: Any) -> None:
    use = lightrag.FLAVOR.use
    host(
        ToolConfig(
            "knowledge_search", use, base_url="http://127.0.0.1:1", api_key=SECRET, timeout=2
        )
    )
    unreachable = _call(lightrag.knowledge_search_tool)
    host(ToolConfig("knowledge_search", use, api_key=SECRET, mode="deep"))
    bad_mode = _call(lightrag.knowledge_search_tool)
    host(ToolConfig("knowledge_search", use, base_url=f"http://user:{SECRET}@example.com"))
    userinfo = _call(lightrag.knowledge_search_tool)
    for message in (unreachable, bad_mode, userinfo):
        assert message.content.startswith("Error: ") and message.artifact is None
        assert SECRET not in message.content
    assert "mode" in bad_mode.content and "config.yaml" in bad_mode.content


def test_ragflow_requires_an_api_key_and_maps_deerflows_keys(host: Any) -> None:
    use = ragflow.FLAVOR.use
    host(ToolConfig("knowledge_search", use))
    assert "api_key is required" in _call(ragflow.knowledge_search_tool).content
    provider = ragflow.FLAVOR.build(
        {"api_key": SECRET, "datasets": ["d1"], "page_size": 4, "similarity_threshold": 0.5,
         "vector_similarity_weight": 0.1, "top_k": 64, "timeout": 5, "base_url": "http://r:9380"},
        None,
    )  # fmt: skip
    shown = repr(provider)
    assert SECRET not in shown
    for part in ("http://r:9380", "1 configured", "page_size=4", "similarity_threshold=0.5",
                 "vector_similarity_weight=0.1", "top_k=64", "timeout=5"):  # fmt: skip
        assert part in shown


def test_provider_is_built_once_per_settings(host: Any, index: Path) -> None:
    host(_local(index=str(index)))
    built: list[Any] = []
    original = local.FLAVOR.build

    def counting(settings: Any, config_dir: Any) -> Any:
        built.append(settings)
        return original(settings, config_dir)

    from deerflow.knowledge.integrations.deerflow._tool import Flavor, make_deerflow_tool

    flavor = Flavor("local index", local.FLAVOR.use, local.KEYS, counting, "d")
    tool = make_deerflow_tool(flavor)
    for _ in range(3):
        _call(tool)
    host(_local(index=str(index), top_k=2))
    _call(tool)
    assert len(built) == 2


def test_check_entry_names_every_setting() -> None:
    (message,) = check_entry(lightrag.FLAVOR, {"max_chars_per_hit": 3, "mode": "mix"})
    assert message == (
        "knowledge_search (LightRAG): config.yaml key 'max_chars_per_hit' is not one of its "
        "settings and is ignored; did you mean 'max_chars_per_chunk'? Its settings: api_key, "
        "base_url, chunk_top_k, max_chars_per_chunk, max_total_chars, mode, timeout, top_k."
    )
    assert check_entry(ragflow.FLAVOR, {k: 1 for k in ragflow.FLAVOR.all_keys}) == []


def test_extension_registers_a_startup_check() -> None:
    services: list[Any] = []
    contributors: list[tuple[str, Any]] = []

    class Registry:
        def service(self, service: Any) -> None:
            services.append(service)

        def middlewares(self, contributor: Any) -> None:
            contributors.append(("middlewares", contributor))

        def task_lifecycle(self, contributor: Any) -> None:
            contributors.append(("task_lifecycle", contributor))

    extension.install(Registry(), {})
    assert len(services) == 1 and extension.install.__deerflow_api__ == "0.1"  # type: ignore[attr-defined]
    assert [kind for kind, _ in contributors] == ["middlewares", "task_lifecycle"]
    assert contributors[0][1] is contributors[1][1]  # one relay: the lead's stop drops its own
    config = AppConfig(
        [
            ToolConfig("kb", local.FLAVOR.use, index_path="x"),
            ToolConfig("web_search", "a:b", foo=1),
        ],
        ToolOutput(tool_overrides={"knowledge_search": 50}),
    )
    warnings = extension.check_config(config)
    assert len(warnings) == 3
    assert "'index_path'" in warnings[0] and "did you mean 'index'?" in warnings[0]
    assert "tools entry 'kb'" in warnings[1]
    assert "only 50 characters" in warnings[2]


def test_readme_config_entries_use_only_known_keys() -> None:
    """The README's config.yaml snippets name real tools and only keys those tools read."""
    import importlib
    import re

    import yaml

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Inside DeerFlow", 1)[1].split("\n## ", 1)[0]
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", section, re.S)]
    entries = [entry for block in blocks for entry in block.get("tools", [])]
    assert {entry["use"] for entry in entries} == {m.FLAVOR.use for m in (local, lightrag, ragflow)}
    for entry in entries:
        module_name, attribute = entry["use"].split(":")
        module = importlib.import_module(module_name)
        assert getattr(module, attribute) is module.knowledge_search_tool
        assert entry["name"] == "knowledge_search"
        extras = {k: v for k, v in entry.items() if k not in ("name", "group", "use")}
        assert check_entry(module.FLAVOR, extras) == []
    budgets = [block["tool_output"] for block in blocks if "tool_output" in block]
    assert budgets and all(set(b) <= set(vars(ToolOutput())) for b in budgets)


def test_ragflow_tool_keeps_deerflows_native_snapshots(
    host: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SYNTHETIC RAGFlow responses (tests/test_providers_ragflow.py): the DeerFlow tool answers
    with DeerFlow's native snapshot and ``[citation:N](#knowledge-…)`` links, fitted under
    DeerFlow's budget, and the key is never shown."""
    import httpx

    from deerflow.knowledge import read_native
    from deerflow.knowledge.providers import ragflow as ragflow_provider
    from tests import test_providers_ragflow as synthetic

    fake = synthetic.two_groups()
    real = ragflow_provider.RAGFlowProvider

    class Routed(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, transport=httpx.MockTransport(fake), **kwargs)

    monkeypatch.setattr(ragflow_provider, "RAGFlowProvider", Routed)
    entry = ToolConfig("knowledge_search", ragflow.FLAVOR.use, base_url=synthetic.BASE,
                       api_key=synthetic.SECRET, datasets=[synthetic.DS_HR, synthetic.DS_ENG,
                                                           synthetic.DS_LEGAL])  # fmt: skip
    host(entry, tool_output=ToolOutput(tool_overrides={"knowledge_search": 400}))
    message = _call(ragflow.knowledge_search_tool, "annual leave")
    assert len(message.content) <= 400 and synthetic.SECRET not in message.content
    assert message.content.startswith("[citation:1](#knowledge-")
    snapshot = message.artifact["knowledge_sources"]
    assert snapshot["version"] == 1 and snapshot["sources"]
    native = read_native(message.content, message.artifact, tool_name="knowledge_search")
    assert native.sources and not native.rejected
    assert {b["question"] for b in fake.retrievals} == {"annual leave"}
