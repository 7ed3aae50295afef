"""The ``deerflow-knowledge`` command line: index, search, verify, serve.

Exit codes, the same for every command (README "Local index and CLI"):

* 0 (``EXIT_OK``): done.
* 1 (``EXIT_FINDING``): the command worked and found a problem: ``verify`` met a forged citation.
* 2 (``EXIT_USAGE``): the caller's or the operator's mistake, nothing was tried: bad arguments
  (typer's own usage errors are 2 too), an empty query, an unknown provider, a bad config file, no
  index yet, a new folder for an index of other folders without ``--add`` or ``--replace``, a
  missing extra or integration, a port already in use.
* 3 (``EXIT_UPSTREAM``): a provider or service failed: LightRAG / RAGFlow unreachable, refusing
  the key or failing; the checkpoint database unreachable; indexing that failed midway, or
  another index run still writing the index after the busy timeout.

Every failure is one ``Error: …`` line on stderr (library warnings about the same failure are
not printed as well). Text that came from documents, providers or threads is printed as plain
text (never as console markup) with control characters replaced; API keys and URL passwords are
never printed.

The module is long because it is four commands with their terminal output, kept together so the
exit-code table and the output rules above hold in one place; everything they compute lives in
the library (:mod:`~deerflow.knowledge.audit`, :mod:`~deerflow.knowledge.settings`, the
providers, :mod:`~deerflow.knowledge.server`).
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import socket
import sqlite3
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Final, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from deerflow.knowledge._provider_settings import PROVIDER_NAMES, flag_settings
from deerflow.knowledge.audit import (
    CITATION_STATUSES,
    CitationAudit,
    ThreadFormatError,
    audit_saved_export,
    audit_thread,
    thread_messages,
)
from deerflow.knowledge.contract import KnowledgeCapabilities, RetrievalProvider, RetrievalResult
from deerflow.knowledge.evidence import read_evidence
from deerflow.knowledge.messages import text_parts
from deerflow.knowledge.providers import build_provider
from deerflow.knowledge.providers.errors import (
    ProviderConfigError,
    ProviderError,
    ProviderQueryError,
)
from deerflow.knowledge.saved_evidence import read_saved_export
from deerflow.knowledge.server._defaults import GATEWAY_DEFAULTS, is_postgres_url
from deerflow.knowledge.settings import KnowledgeSettings, load_settings
from deerflow.knowledge.text import printable, visible_text

__all__ = [
    "CHECKPOINT_PROBE_SECONDS",
    "EXIT_FINDING",
    "EXIT_OK",
    "EXIT_UPSTREAM",
    "EXIT_USAGE",
    "app",
    "main",
]

EXIT_OK: Final = 0
EXIT_FINDING: Final = 1
EXIT_USAGE: Final = 2
EXIT_UPSTREAM: Final = 3
#: How long ``serve`` waits for the checkpoint database before giving up (exit 3).
CHECKPOINT_PROBE_SECONDS: Final = 30.0
# ``--constrain-citations`` sends ``extra_body``, which only langchain-openai's model passes on.
_OPENAI_MODEL_PREFIX: Final = "openai:"
_EXCERPT_PREVIEW_CHARS: Final = 400

app = typer.Typer(
    name="deerflow-knowledge",
    help="Verifiable knowledge retrieval for LLM agents: build a local index, search any "
    "provider through the real knowledge_search tool, audit the citations of a saved thread, "
    "and run the reference gateway.",
    epilog="Exit codes: 0 ok; 1 a finding (verify: a forged citation); 2 usage or configuration "
    "error; 3 provider or upstream failure.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is plain: docstrings are reflowed, brackets kept literally
)
_out = Console(highlight=False, soft_wrap=False)
_err = Console(stderr=True, highlight=False)


def main() -> None:
    """Console-script entry point."""
    app()


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            shown = version("deerflow-knowledge")
        except PackageNotFoundError:  # a source tree on sys.path, not installed
            shown = "unknown (not installed)"
        _out.print(_safe(f"deerflow-knowledge {shown}"))
        raise typer.Exit(EXIT_OK)


@app.callback()
def _options(
    _show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            callback=_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Verifiable knowledge retrieval for LLM agents."""


# --------------------------------------------------------------------------- shared helpers


def _safe(text: object) -> Text:
    """Untrusted text for the terminal: no markup, no control characters (newline and tab kept),
    invisible format characters such as bidi overrides spelled ``<U+XXXX>``."""
    return Text(printable(visible_text(str(text))))


def _fail(message: str, code: int) -> NoReturn:
    _err.print(_safe(f"Error: {message}"), style="red", soft_wrap=True)
    raise typer.Exit(code)


def _exit_code(error: ProviderError) -> int:
    """Whose fault: the caller's or operator's settings (2), or the provider's (3)."""
    return (
        EXIT_USAGE if isinstance(error, ProviderConfigError | ProviderQueryError) else EXIT_UPSTREAM
    )


@contextmanager
def _quiet_library() -> Iterator[None]:
    """The command reports each failure itself, once: library warnings would repeat it."""
    logger = logging.getLogger("deerflow.knowledge")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _print_json(value: Any) -> None:
    # ASCII escapes keep control characters from reaching the terminal.
    typer.echo(json.dumps(value, ensure_ascii=True, indent=2))


ProviderOption = Annotated[
    str | None,
    typer.Option(
        "--provider",
        "-p",
        metavar="NAME",
        help=f"Retrieval provider: {', '.join(PROVIDER_NAMES)} "
        "(default: $DEERFLOW_KNOWLEDGE_PROVIDER, the config file, or local).",
        show_default=False,
    ),
]
IndexOption = Annotated[
    Path | None,
    typer.Option(
        "--index",
        metavar="FILE",
        help="Local index file (default: $DEERFLOW_KNOWLEDGE_INDEX, the config file, or "
        "./.deerflow-knowledge/index.sqlite).",
        show_default=False,
        dir_okay=False,
    ),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help='TOML config file with provider settings (its keys: README, "Local index and '
        'CLI", Settings).',
        show_default=False,
        exists=True,
        dir_okay=False,
    ),
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        metavar="URL",
        help="LightRAG or RAGFlow base URL (default: $LIGHTRAG_BASE_URL / $RAGFLOW_BASE_URL). "
        "API keys are read only from $LIGHTRAG_API_KEY / $RAGFLOW_API_KEY or the config file.",
        show_default=False,
    ),
]
DatasetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--dataset",
        metavar="ID",
        help="RAGFlow dataset id to search (repeatable; default: $RAGFLOW_DATASETS).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def _settings(
    *,
    config: Path | None,
    provider: str | None = None,
    index: Path | None = None,
    base_url: str | None = None,
    datasets: list[str] | None = None,
) -> KnowledgeSettings:
    try:
        flags: dict[str, Any] = {"--index": index, "--dataset": tuple(datasets or ())}
        settings = load_settings(
            config_file=config,
            provider=provider,
            **{
                setting.field: value
                for flag, value in flags.items()
                for setting in flag_settings(flag).values()
            },
        )
    except ProviderError as exc:
        _fail(str(exc), EXIT_USAGE)
    if base_url is not None:
        takes = flag_settings("--base-url")  # the providers with a base URL, from the table
        setting = takes.get(settings.provider)
        if setting is None:
            _fail(f"--base-url applies to the {' and '.join(takes)} providers only.", EXIT_USAGE)
        changes: dict[str, Any] = {setting.field: base_url}
        settings = replace(settings, **changes)
    return settings


def _provider(settings: KnowledgeSettings) -> RetrievalProvider:
    try:
        return build_provider(settings.provider, settings)
    except ProviderError as exc:
        _fail(str(exc), EXIT_USAGE)


def _close(provider: object) -> None:
    close = getattr(provider, "close", None)
    if callable(close):
        close()


# --------------------------------------------------------------------------- index


@app.command()
def index(
    path: Annotated[
        Path | None,
        typer.Argument(
            metavar="[PATH]",
            help="Folder of Markdown, text and PDF files to index (default: the bundled "
            "sample corpus about this project).",
            show_default=False,
            exists=True,
            file_okay=False,
        ),
    ] = None,
    index_file: IndexOption = None,
    config: ConfigOption = None,
    add: Annotated[
        bool,
        typer.Option(
            "--add",
            help="Index PATH beside the folders already in the index (their documents stay).",
        ),
    ] = False,
    replace_: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Make the index hold PATH only: documents of other folders are removed.",
        ),
    ] = False,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            metavar="GLOB",
            help="Leave out paths matching GLOB, in .gitignore syntax, relative to PATH "
            "(node_modules, '*.log', 'drafts/'); repeatable.",
            show_default=False,
        ),
    ] = None,
    no_gitignore: Annotated[
        bool,
        typer.Option(
            "--no-gitignore",
            help="Index what the folder's .gitignore files leave out (they are honoured by "
            "default).",
        ),
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Build or update the local index of PATH.

    Unchanged files are skipped by content hash, changed files are chunked again and deleted files
    are removed. Searches may run while the index is updated. An index can hold several folders:
    when it holds another folder's documents, say --add (keep them) or --replace (remove them).
    Everything left out is listed with a reason (hidden, unsupported type, excluded, ignored by
    .gitignore, unreadable, too large); the rest is indexed.
    """
    from deerflow.knowledge.providers.local import (
        FolderChoiceNeeded,
        IndexProgress,
        LocalProvider,
        sample_corpus_path,
    )

    if add and replace_:
        _fail("--add and --replace are opposite choices; give one of them.", EXIT_USAGE)
    settings = _settings(config=config, index=index_file)
    root = path if path is not None else sample_corpus_path()
    try:
        provider = LocalProvider(settings.index_path)
    except ProviderError as exc:
        _fail(str(exc), EXIT_USAGE)
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # the report lists damaged files

    with (
        _quiet_library(),
        Progress(
            TextColumn("[bold]Indexing"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[current]}", markup=False),
            console=_err,
            transient=True,
            disable=json_output,
        ) as bar,
    ):
        task = bar.add_task("index", total=None, current="")

        def advance(event: IndexProgress) -> None:
            bar.update(task, total=event.total, completed=event.done, current=printable(event.path))

        def waiting() -> None:
            _err.print(
                _safe(
                    f"Another index run is writing {settings.index_path}; waiting for it to finish…"
                ),
                soft_wrap=True,
            )

        try:
            report = provider.index(
                root,
                mode="add" if add else "replace" if replace_ else "update",
                exclude=tuple(exclude or ()),
                gitignore=not no_gitignore,
                progress=advance,
                waiting=waiting,
            )
        except FolderChoiceNeeded as exc:
            folders = ", ".join(exc.folders)
            _fail(
                f"the index {settings.index_path} holds {exc.documents} documents from "
                f"{folders}. Run again with --add to index {Path(root)} beside them, or with "
                "--replace to replace them with it; nothing was changed.",
                EXIT_USAGE,
            )
        except ProviderError as exc:
            _fail(str(exc), _exit_code(exc))
        except (OSError, sqlite3.Error) as exc:  # the index path: missing folder, not a database
            detail = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            _fail(f"cannot write the index {settings.index_path} ({detail}).", EXIT_USAGE)

    hint = _empty_hint(report.root, report.skipped, indexed=_indexed(report))
    if json_output:
        _print_json(
            {
                "root": report.root,
                "index": report.index_path,
                "added": list(report.added),
                "updated": list(report.updated),
                "unchanged": list(report.unchanged),
                "removed": list(report.removed),
                "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped],
                "documents": report.documents,
                "chunks": report.chunks,
                "chunks_written": report.chunks_written,
                "other_folders": [
                    {"folder": folder, "documents": count} for folder, count in report.other_folders
                ],
                "nothing_indexed": hint,
                "seconds": round(report.seconds, 3),
            }
        )
        return
    summary = Table(title="Local index", show_header=False)
    summary.add_column("what")
    summary.add_column("count", justify="right")
    for label, count in (
        ("Added", len(report.added)),
        ("Updated", len(report.updated)),
        ("Unchanged", len(report.unchanged)),
        ("Removed", len(report.removed)),
        ("Skipped", len(report.skipped)),
        ("Documents in index", report.documents),
        ("Chunks in index", report.chunks),
        ("Chunks written", report.chunks_written),
    ):
        summary.add_row(label, str(count))
    summary.add_row("Time", f"{report.seconds:.2f} s")
    _out.print(summary)
    _out.print(f"Index file: {_safe(report.index_path)}", soft_wrap=True, highlight=False)
    _out.print(f"Folder: {_safe(report.root)}", soft_wrap=True, highlight=False)
    for folder, count in report.other_folders:
        _out.print(
            _safe(f"Also in the index: {count} documents from {folder}"),
            soft_wrap=True,
            highlight=False,
        )
    if report.skipped:
        skipped = Table(title="Skipped files", title_style="yellow")
        skipped.add_column("Path")
        skipped.add_column("Reason")
        for item in report.skipped:
            skipped.add_row(_safe(item.path), _safe(item.reason))
        _out.print(skipped)
    if hint is not None:
        _err.print(_safe(f"Warning: {hint}"), style="yellow", soft_wrap=True)


def _indexed(report: Any) -> int:
    return len(report.added) + len(report.updated) + len(report.unchanged)


#: What to do about each kind of reason, when a run indexed nothing (reason prefixes).
_REMEDIES: Final = (
    ("unsupported type", "only .md, .markdown, .txt and .pdf files are indexed"),
    ("ignored by", "--no-gitignore indexes what .gitignore files leave out"),
    ("excluded by", "drop the --exclude patterns that match"),
    ("hidden", "hidden files and folders (names starting with a dot) are never indexed"),
    ("symbolic link", "links are not followed: index the folder they point to"),
    ("folder nested deeper", "index a deeper folder directly"),
)


def _empty_hint(root: str, skipped: Any, *, indexed: int) -> str | None:
    """Why a run indexed nothing from its folder and what to do, or None if it indexed files."""
    if indexed:
        return None
    if not skipped:
        return (
            f"nothing was indexed: {root} holds no files. Put Markdown (.md, .markdown), text "
            "(.txt) or PDF (.pdf) files in it, or index another folder."
        )
    counts: Counter[str] = Counter()
    remedies: list[str] = []
    for item in skipped:
        for prefix, remedy in _REMEDIES:
            if item.reason.startswith(prefix):
                counts[prefix] += 1
                if remedy not in remedies:
                    remedies.append(remedy)
                break
        else:
            counts["other"] += 1
    kinds = ", ".join(f"{count} {kind}" for kind, count in counts.most_common())
    advice = "; ".join(remedies) or "the reasons are listed above"
    return (
        f"nothing was indexed: all {len(skipped)} entries of {root} were left out ({kinds}). "
        f"{advice[0].upper()}{advice[1:]}."
    )


# --------------------------------------------------------------------------- search


@app.command()
def search(
    query: Annotated[
        str, typer.Argument(metavar="QUERY", help="What to look for.", show_default=False)
    ],
    provider: ProviderOption = None,
    index_file: IndexOption = None,
    config: ConfigOption = None,
    base_url: BaseUrlOption = None,
    dataset: DatasetOption = None,
    json_output: Annotated[
        bool,
        typer.Option("--json", help='Print {"content": ..., "artifact": ...} as JSON.'),
    ] = False,
    raw: Annotated[
        bool,
        typer.Option("--raw", help="Also print the tool content exactly as the model sees it."),
    ] = False,
) -> None:
    """Run the real knowledge_search tool and show the hits with their verified evidence.

    The tool's artifact is read back with read_evidence (the same reader every consumer uses), so
    each source shown here has been re-verified: its id recomputes and its handle and excerpt are
    in the content. When the tool reports an error the exit code says whose fault it is: 2 for
    the query or the settings (an empty query, no index yet), 3 for the provider.
    """
    from deerflow.knowledge.tools import MAX_QUERY_CHARS

    if not query.strip():
        _fail("the query is empty; say what to look for.", EXIT_USAGE)
    if len(query.strip()) > MAX_QUERY_CHARS:
        _fail(f"the query is longer than {MAX_QUERY_CHARS} characters.", EXIT_USAGE)
    settings = _settings(
        config=config, provider=provider, index=index_file, base_url=base_url, datasets=dataset
    )
    retrieval = _Recording(_provider(settings))
    try:
        with _quiet_library():
            content, artifact, tool_name = asyncio.run(_invoke(retrieval, query))
    finally:
        _close(retrieval.inner)
    failed = content.startswith("Error:")
    code = _exit_code(retrieval.error) if retrieval.error is not None else EXIT_UPSTREAM
    if json_output:
        _print_json({"content": content, "artifact": artifact})
        if failed:
            raise typer.Exit(code)
        return
    if failed:
        _fail(content.removeprefix("Error:").strip(), code)
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
        _out.print(_safe(content), soft_wrap=True)
        _out.print()
    unattributed = content.count("(unattributed: ")
    if not evidence.sources:
        _out.print(_safe(content if not raw else "No citable sources."))
        return
    count = len(evidence.sources)
    table = Table(title=_safe(f"{provider}: {count} source{'' if count == 1 else 's'}"))
    table.add_column("#", justify="right")
    table.add_column("Source")
    table.add_column("Evidence")
    for number, source in enumerate(evidence.shared, start=1):
        locators = [f"page {source.page}"] if source.page is not None else []
        if source.dataset_name is not None:
            locators.append(f"dataset {source.dataset_name}")
        if source.url is not None:
            locators.append(source.url)
        head = Text.assemble(_safe(source.title), ("\n" + ", ".join(locators), "cyan"))
        head.append(f"\n{source.id}", style="dim")
        table.add_row(str(number), head, _evidence(source.excerpt))
    offset = len(evidence.shared)
    for number, native_source in enumerate(evidence.native, start=offset + 1):
        head = Text.assemble(
            _safe(f"{native_source.dataset_name} / {native_source.document_name}"),
            ("\n" + ", ".join(f"page {p}" for p in native_source.pages), "cyan"),
        )
        head.append(f"\n{native_source.id} (native RAGFlow)", style="dim")
        table.add_row(str(number), head, _evidence(native_source.text))
    _out.print(table)
    reasons = [r.reason for r in evidence.rejected if not r.whole]
    errors = list(evidence.errors)
    if reasons or errors:
        _err.print(
            _safe(
                f"Warning: evidence that did not verify was dropped "
                f"({', '.join(errors + reasons)})."
            ),
            style="yellow",
        )
    else:
        _out.print(Text("✓ every source verified (id, handle and excerpt)", style="green"))
    if unattributed:
        _out.print(
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
    text.append_text(_safe(preview))
    return text


# --------------------------------------------------------------------------- verify


_STATUS_STYLES: Final = {
    "verified": "green",
    "evidence-not-loaded": "yellow",
    "malformed": "yellow",
    "forged": "bold red",
    "web": "blue",
}


@app.command()
def verify(
    thread: Annotated[
        Path,
        typer.Argument(
            metavar="THREAD",
            help=(
                "Saved thread: a LangGraph state JSON, {'messages': [...]}, or a message list; "
                "or a DeerFlow batch export (JSON or JSON Lines items with result and "
                "result_artifact)."
            ),
            show_default=False,
            dir_okay=False,
        ),
    ],
    json_output: JsonOption = False,
) -> None:
    """Audit every citation in every assistant message of a saved thread.

    Each citation is checked against the evidence of the tool messages that precede it:
    verified (a record with that id verifies), forged (a record with that id is present but fails
    verification: id_mismatch, excerpt_missing, handle_missing, bad_field, bad_version ...),
    evidence-not-loaded (no preceding evidence mentions the id), malformed (bad destination) or
    web (an external link, not audited). Exit code: 1 when any citation is forged, 2 when the file
    cannot be read, otherwise 0.
    """
    try:
        text = thread.read_text(encoding="utf-8")
        saved = read_saved_export(text)  # a batch export: reports beside their saved evidence
        if saved is None:
            messages = thread_messages(json.loads(text))
    except OSError as exc:
        _fail(f"cannot read {thread} ({exc.strerror or type(exc).__name__}).", EXIT_USAGE)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, format
        detail = str(exc) if isinstance(exc, ThreadFormatError) else type(exc).__name__
        _fail(f"{thread} is not a saved thread ({detail}).", EXIT_USAGE)
    if saved is None:
        audits = audit_thread(messages)
    else:
        messages, audits = audit_saved_export(saved)
    counts: Counter[str] = Counter(audit.status for audit in audits)
    forged = counts["forged"] > 0
    if json_output:
        _print_json(
            {
                "thread": str(thread),
                "messages": len(messages),
                "assistant_messages": _answers(messages),
                "citations": [audit.to_json() for audit in audits],
                "counts": {status: counts[status] for status in CITATION_STATUSES},
                "forged": forged,
            }
        )
    else:
        _show_audit(thread, messages, audits, counts)
    if forged:
        raise typer.Exit(EXIT_FINDING)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _answers(messages: list[dict[str, Any]]) -> int:
    """Assistant messages with text: a message that only calls a tool answers nothing."""
    return sum(
        1 for m in messages if m["role"] == "ai" and "".join(text_parts(m["content"])).strip()
    )


def _show_audit(
    thread: Path, messages: list[dict[str, Any]], audits: list[CitationAudit], counts: Counter[str]
) -> None:
    assistant = _answers(messages)
    # The path on a line of its own: a long one would crowd the counts out of the title.
    _out.print(_safe(str(thread)), soft_wrap=True)
    table = Table(
        title=f"{_count(len(audits), 'citation')} in {_count(assistant, 'assistant message')}"
    )
    table.add_column("Msg", justify="right")
    # Never cut: "evidence-not-loaded" is the finding (other columns wrap first).
    table.add_column("Status", no_wrap=True, min_width=max(map(len, CITATION_STATUSES)))
    table.add_column("Kind")
    table.add_column("Label")
    table.add_column("Source / reason")
    for audit in audits:
        detail = audit.title if audit.status == "verified" else (audit.reason or "")
        if audit.source_id and audit.status != "verified":
            detail = f"{audit.source_id} {detail}".strip()
        table.add_row(
            str(audit.message_index),
            Text(audit.status, style=_STATUS_STYLES[audit.status]),
            audit.kind,
            _safe(audit.label),
            _safe(detail),
        )
    _out.print(table)
    summary = ", ".join(f"{counts[s]} {s}" for s in CITATION_STATUSES if counts[s])
    _out.print(_safe(summary or "No citations."))
    if counts["forged"]:
        _out.print(Text("✗ forged citations found", style="bold red"))


# --------------------------------------------------------------------------- serve


@app.command()
def serve(
    provider: ProviderOption = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            metavar="PROVIDER:NAME",
            help="Chat model as provider:name (e.g. openai:gpt-4o-mini), built with LangChain's "
            "init_chat_model. Default: the offline extractive responder (no credentials).",
            show_default=False,
        ),
    ] = None,
    host: Annotated[
        str, typer.Option("--host", metavar="ADDRESS", help="Interface to bind.")
    ] = GATEWAY_DEFAULTS.host,
    port: Annotated[
        int, typer.Option("--port", metavar="PORT", help="TCP port (1-65535).", min=1, max=65535)
    ] = GATEWAY_DEFAULTS.port,
    checkpoint: Annotated[
        str | None,
        typer.Option(
            "--checkpoint",
            metavar="PATH|URL",
            help="Thread storage: a SQLite file path or a postgres:// URL "
            f"(default: {GATEWAY_DEFAULTS.checkpoint}).",
            show_default=False,
        ),
    ] = None,
    index_file: IndexOption = None,
    config: ConfigOption = None,
    base_url: BaseUrlOption = None,
    dataset: DatasetOption = None,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--cors-origin",
            metavar="ORIGIN",
            help="An origin (e.g. http://localhost:3000) allowed to call the API from a browser; "
            "repeatable. Default: none (same-origin only); writes from other origins get 403.",
            show_default=False,
        ),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            metavar="NAME",
            help="A host name (e.g. gateway.example.com) requests may give in their Host header, "
            "besides the address bound and localhost; repeatable. Other hosts get 400, which "
            "stops DNS-rebinding pages.",
            show_default=False,
        ),
    ] = None,
    run_timeout: Annotated[
        float,
        typer.Option(
            "--run-timeout",
            metavar="SECONDS",
            help="Time budget of one run, in seconds (more than 0).",
            min=0.001,
        ),
    ] = GATEWAY_DEFAULTS.run_timeout,
    constrain_citations: Annotated[
        bool,
        typer.Option(
            "--constrain-citations",
            help="Send each answer to search results a GBNF grammar that admits only the verified "
            "citation links, exactly (OPENAI_BASE_URL at a llama.cpp server). Needs "
            "--model openai:NAME.",
        ),
    ] = False,
) -> None:
    """Run the reference gateway (FastAPI + LangGraph) with the bundled chat page.

    Everything is checked before the URL is announced: the provider settings, the chat model,
    the checkpoint store (a Postgres database must answer) and the port.
    """
    try:
        import deerflow.knowledge.server as server
    except ModuleNotFoundError as exc:
        if exc.name is None or not exc.name.startswith("deerflow.knowledge.server"):
            raise
        _fail(
            "the gateway (deerflow.knowledge.server) is not available in this installation.",
            EXIT_USAGE,
        )
    settings = _settings(
        config=config, provider=provider, index=index_file, base_url=base_url, datasets=dataset
    )
    retrieval = _provider(settings)
    if settings.provider == "local" and not Path(settings.index_path).is_file():
        _err.print(
            _safe(
                f"Warning: no index at {settings.index_path} yet; searches will fail until you "
                "run `deerflow-knowledge index PATH`."
            ),
            style="yellow",
            soft_wrap=True,
        )
    if constrain_citations and (model is None or not model.startswith(_OPENAI_MODEL_PREFIX)):
        _fail(
            "--constrain-citations needs an OpenAI-compatible model that takes a GBNF grammar: "
            "--model openai:NAME with OPENAI_BASE_URL at a llama.cpp server.",
            EXIT_USAGE,
        )
    chat_model = _chat_model(model) if model is not None else None
    options: dict[str, Any] = {
        "model": chat_model,
        "model_label": model,
        "cors_origins": tuple(cors_origin or ()),
        "allowed_hosts": tuple(allowed_host or ()),
        "run_timeout": run_timeout,
        "constrain_citations": constrain_citations,
    }
    if checkpoint is not None:
        _check_checkpoint(server, checkpoint)
        options["checkpoint"] = checkpoint
    config_ = server.build_config(retrieval, **options)
    server.serve(config_, host=host, port=port, sock=_listen(host, port))


def _chat_model(model: str) -> Any:
    if ":" not in model:
        _fail("--model must look like provider:name, e.g. openai:gpt-4o-mini.", EXIT_USAGE)
    try:
        from langchain.chat_models import init_chat_model

        return init_chat_model(model)
    except ImportError:
        package = "langchain-" + model.split(":", 1)[0].replace("_", "-")
        _fail(
            f"cannot build the chat model {model}: install its integration "
            f"(pip install {package}).",
            EXIT_USAGE,
        )
    except Exception as exc:  # unknown provider, missing credentials
        _fail(f"cannot build the chat model {model} ({type(exc).__name__}).", EXIT_USAGE)


def _without_password(target: str) -> str:
    parts = urllib.parse.urlsplit(target)
    if parts.password is None:
        return target
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _check_checkpoint(server: Any, target: str) -> None:
    """Open the checkpoint store once, as the gateway will, so a failure is one message."""
    if not is_postgres_url(target):
        return  # a SQLite file: created on first use
    try:
        import langgraph.checkpoint.postgres  # noqa: F401 - the extra's presence is the check
    except ImportError:
        _fail(
            "a Postgres checkpoint needs the postgres extra: "
            "pip install 'deerflow-knowledge[postgres]'.",
            EXIT_USAGE,
        )

    async def probe() -> None:
        async with server.open_checkpointer(target):
            pass

    shown = _without_password(target)
    try:
        asyncio.run(asyncio.wait_for(probe(), CHECKPOINT_PROBE_SECONDS))
    except TimeoutError:
        _fail(
            f"the checkpoint database {shown} did not answer within "
            f"{CHECKPOINT_PROBE_SECONDS:.0f} s.",
            EXIT_UPSTREAM,
        )
    except Exception as exc:  # psycopg's OperationalError and kin; its text names host and port
        password = urllib.parse.urlsplit(target).password
        detail = " ".join(str(exc).split()) or type(exc).__name__
        if password:
            detail = detail.replace(password, "***")
        _fail(f"cannot open the checkpoint database {shown}: {detail}", EXIT_UPSTREAM)


def _listen(host: str, port: int) -> socket.socket:
    """Bind the port before anything is announced: a busy port is an error, not another URL."""
    from deerflow.knowledge.server.process._listen import open_listener

    try:
        return open_listener(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            _fail(
                f"port {port} on {host} is already in use; stop the other server or pick "
                "another with --port.",
                EXIT_USAGE,
            )
        reason = exc.strerror or type(exc).__name__
        _fail(f"cannot listen on {host}:{port} ({reason}).", EXIT_USAGE)


if __name__ == "__main__":  # pragma: no cover
    main()
