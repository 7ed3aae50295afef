"""``deerflow-knowledge search``: run the real ``knowledge_search`` tool and show verified hits.

The query goes through the same tool an agent calls, and its artifact is read back with
:func:`~deerflow.knowledge.evidence.read_evidence`, so what is shown has been verified the way
every consumer verifies it. ``_Recording`` keeps the provider's typed error so the exit code can
say whose fault a failure was while the tool still answers ``Error: …``.
``tests/test_cli.py`` covers the command (its search section); ``tests/test_visible.py`` the
display of hostile text.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Final

import typer
from rich.table import Table
from rich.text import Text

from deerflow.knowledge import cli
from deerflow.knowledge.cli import _provider_options as options
from deerflow.knowledge.contract import KnowledgeCapabilities, RetrievalProvider, RetrievalResult
from deerflow.knowledge.evidence import MessageEvidence, read_evidence
from deerflow.knowledge.providers.errors import ProviderError

__all__ = ["search"]

_EXCERPT_PREVIEW_CHARS: Final = 400

QueryArgument = Annotated[
    str, typer.Argument(metavar="QUERY", help="What to look for.", show_default=False)
]
SearchJsonOption = Annotated[
    bool, typer.Option("--json", help='Print {"content": ..., "artifact": ...} as JSON.')
]
RawOption = Annotated[
    bool, typer.Option("--raw", help="Also print the tool content exactly as the model sees it.")
]


def search(
    query: QueryArgument,
    provider: options.ProviderOption = None,
    index_file: options.IndexOption = None,
    config: options.ConfigOption = None,
    base_url: options.BaseUrlOption = None,
    dataset: options.DatasetOption = None,
    json_output: SearchJsonOption = False,
    raw: RawOption = False,
) -> None:
    """Run the real knowledge_search tool and show the hits with their verified evidence.

    The tool's artifact is read back with read_evidence (the same reader every consumer uses), so
    each source shown here has been re-verified: its id recomputes and its handle and excerpt are
    in the content. When the tool reports an error the exit code says whose fault it is: 2 for
    the query or the settings (an empty query, no index yet), 3 for the provider.
    """
    from deerflow.knowledge.tools import MAX_QUERY_CHARS

    if not query.strip():
        cli._fail("the query is empty; say what to look for.", cli.EXIT_USAGE)
    if len(query.strip()) > MAX_QUERY_CHARS:
        cli._fail(f"the query is longer than {MAX_QUERY_CHARS} characters.", cli.EXIT_USAGE)
    settings = options.settings_from(
        config=config, provider=provider, index=index_file, base_url=base_url, datasets=dataset
    )
    retrieval = _Recording(options.provider_from(settings))
    try:
        with cli._quiet_library():
            content, artifact, tool_name = asyncio.run(_invoke(retrieval, query))
    finally:
        options.close(retrieval.inner)
    failed = content.startswith("Error:")
    code = cli._exit_code(retrieval.error) if retrieval.error is not None else cli.EXIT_UPSTREAM
    if json_output:
        cli._print_json({"content": content, "artifact": artifact})
        if failed:
            raise typer.Exit(code)
        return
    if failed:
        cli._fail(content.removeprefix("Error:").strip(), code)
    _show_search(retrieval.name, content, artifact, tool_name=tool_name, raw=raw)


class _Recording:
    """A provider that remembers the error it raised, so the exit code can name whose fault it
    was while the tool still turns it into its usual ``Error: …`` content."""

    def __init__(self, inner: RetrievalProvider) -> None:
        self.inner = inner
        self.error: ProviderError | None = None

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def capabilities(self) -> KnowledgeCapabilities:
        return self.inner.capabilities

    async def search(self, query: str, *, limit: int | None = None) -> RetrievalResult:
        try:
            return await self.inner.search(query, limit=limit)
        except ProviderError as exc:
            self.error = exc
            raise

    def __getattr__(self, name: str) -> Any:  # format_for_tool, tool_description, ...
        return getattr(self.inner, name)


async def _invoke(provider: RetrievalProvider, query: str) -> tuple[str, Any, str | None]:
    from langchain_core.messages import ToolMessage

    from deerflow.knowledge.tools import make_knowledge_tool

    tool = make_knowledge_tool(provider)
    message = await tool.ainvoke(
        {"type": "tool_call", "id": "cli-search", "name": tool.name, "args": {"query": query}}
    )
    assert isinstance(message, ToolMessage)
    content = message.content if isinstance(message.content, str) else str(message.content)
    return content, message.artifact, message.name


def _show_search(
    provider: str, content: str, artifact: Any, *, tool_name: str | None, raw: bool
) -> None:
    evidence = read_evidence(content, artifact, tool_name=tool_name)
    if raw:
        cli._out.print(cli._safe(content), soft_wrap=True)
        cli._out.print()
    if not evidence.sources:
        cli._out.print(cli._safe(content if not raw else "No citable sources."))
        return
    cli._out.print(_sources_table(provider, evidence))
    _show_verdict(evidence, unattributed=content.count("(unattributed: "))


def _sources_table(provider: str, evidence: MessageEvidence) -> Table:
    count = len(evidence.sources)
    table = Table(title=cli._safe(f"{provider}: {count} source{'' if count == 1 else 's'}"))
    table.add_column("#", justify="right")
    table.add_column("Source")
    table.add_column("Evidence")
    for number, source in enumerate(evidence.shared, start=1):
        locators = [f"page {source.page}"] if source.page is not None else []
        if source.dataset_name is not None:
            locators.append(f"dataset {source.dataset_name}")
        if source.url is not None:
            locators.append(source.url)
        head = Text.assemble(cli._safe(source.title), ("\n" + ", ".join(locators), "cyan"))
        head.append(f"\n{source.id}", style="dim")
        table.add_row(str(number), head, _evidence(source.excerpt))
    offset = len(evidence.shared)
    for number, native_source in enumerate(evidence.native, start=offset + 1):
        head = Text.assemble(
            cli._safe(f"{native_source.dataset_name} / {native_source.document_name}"),
            ("\n" + ", ".join(f"page {p}" for p in native_source.pages), "cyan"),
        )
        head.append(f"\n{native_source.id} (native RAGFlow)", style="dim")
        table.add_row(str(number), head, _evidence(native_source.text))
    return table


def _show_verdict(evidence: MessageEvidence, *, unattributed: int) -> None:
    reasons = [r.reason for r in evidence.rejected if not r.whole]
    errors = list(evidence.errors)
    if reasons or errors:
        cli._err.print(
            cli._safe(
                f"Warning: evidence that did not verify was dropped "
                f"({', '.join(errors + reasons)})."
            ),
            style="yellow",
        )
    else:
        cli._out.print(Text("✓ every source verified (id, handle and excerpt)", style="green"))
    if unattributed:
        cli._out.print(
            Text(
                f"{unattributed} unattributed hits (no document title, not citable) are not "
                "listed; --raw shows them.",
                style="dim",
            )
        )


def _evidence(excerpt: str) -> Text:
    excerpt = " ".join(excerpt.split())
    preview = (
        excerpt
        if len(excerpt) <= _EXCERPT_PREVIEW_CHARS
        else excerpt[:_EXCERPT_PREVIEW_CHARS] + "…"
    )
    text = Text("✓ verified\n", style="green")
    text.append_text(cli._safe(preview))
    return text
