"""``deerflow-knowledge verify``: audit every citation of a saved thread or batch export.

The audit itself is :mod:`~deerflow.knowledge.audit` (pure); this module reads the file, chooses
between a saved thread and a DeerFlow batch export, prints the table or ``--json`` and exits 1
when a citation is forged, 2 when the file cannot be read. ``tests/test_cli.py`` covers it (its
verify section and the 80-column table).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Final

import typer
from rich.table import Table
from rich.text import Text

from deerflow.knowledge import cli
from deerflow.knowledge.audit import (
    CITATION_STATUSES,
    CitationAudit,
    ThreadFormatError,
    audit_saved_export,
    audit_thread,
    thread_messages,
)
from deerflow.knowledge.cli import _provider_options as options
from deerflow.knowledge.messages import text_parts
from deerflow.knowledge.saved_evidence import read_saved_export

__all__ = ["verify"]

_STATUS_STYLES: Final = {
    "verified": "green",
    "evidence-not-loaded": "yellow",
    "malformed": "yellow",
    "forged": "bold red",
    "web": "blue",
}

ThreadArgument = Annotated[
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
]


def verify(
    thread: ThreadArgument,
    json_output: options.JsonOption = False,
) -> None:
    """Audit every citation in every assistant message of a saved thread.

    Each citation is checked against the evidence of the tool messages that precede it:
    verified (a record with that id verifies), forged (a record with that id is present but fails
    verification: id_mismatch, excerpt_missing, handle_missing, bad_field, bad_version ...),
    evidence-not-loaded (no preceding evidence mentions the id), malformed (bad destination) or
    web (an external link, not audited). Exit code: 1 when any citation is forged, 2 when the file
    cannot be read, otherwise 0.
    """
    messages, audits = _audit(thread)
    counts: Counter[str] = Counter(audit.status for audit in audits)
    forged = counts["forged"] > 0
    if json_output:
        cli._print_json(
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
        raise typer.Exit(cli.EXIT_FINDING)


def _audit(thread: Path) -> tuple[list[dict[str, Any]], list[CitationAudit]]:
    """The file's messages and their citations' audits, or exit 2 when it is not a saved thread."""
    try:
        text = thread.read_text(encoding="utf-8")
        saved = read_saved_export(text)  # a batch export: reports beside their saved evidence
        if saved is None:
            messages = thread_messages(json.loads(text))
    except OSError as exc:
        cli._fail(f"cannot read {thread} ({exc.strerror or type(exc).__name__}).", cli.EXIT_USAGE)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, format
        detail = str(exc) if isinstance(exc, ThreadFormatError) else type(exc).__name__
        cli._fail(f"{thread} is not a saved thread ({detail}).", cli.EXIT_USAGE)
    if saved is None:
        return messages, audit_thread(messages)
    return audit_saved_export(saved)


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
    cli._out.print(cli._safe(str(thread)), soft_wrap=True)
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
            cli._safe(audit.label),
            cli._safe(detail),
        )
    cli._out.print(table)
    summary = ", ".join(f"{counts[s]} {s}" for s in CITATION_STATUSES if counts[s])
    cli._out.print(cli._safe(summary or "No citations."))
    if counts["forged"]:
        cli._out.print(Text("✗ forged citations found", style="bold red"))
