"""``deerflow-knowledge index``: build or update the local index of a folder, and report the run.

The command is a terminal around :meth:`LocalProvider.index
<deerflow.knowledge.providers.local.LocalProvider.index>`: it chooses the run's mode from
``--add`` / ``--replace``, draws the progress bar, turns the provider's errors into exit codes and
prints the report (a table, or ``--json``) with a hint when nothing was indexed.
``tests/test_cli_index.py`` covers the hint; ``tests/test_cli.py`` the command.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from deerflow.knowledge import cli
from deerflow.knowledge.cli import _provider_options as options
from deerflow.knowledge.providers.errors import ProviderError
from deerflow.knowledge.text import printable

if TYPE_CHECKING:
    from deerflow.knowledge.providers.local import (
        IndexMode,
        IndexReport,
        LocalProvider,
        SkippedFile,
    )

__all__ = ["empty_hint", "index"]

#: What to do about each kind of reason, when a run indexed nothing (reason prefixes).
_REMEDIES: Final = (
    ("unsupported type", "only .md, .markdown, .txt and .pdf files are indexed"),
    ("ignored by", "--no-gitignore indexes what .gitignore files leave out"),
    ("excluded by", "drop the --exclude patterns that match"),
    ("hidden", "hidden files and folders (names starting with a dot) are never indexed"),
    ("symbolic link", "links are not followed: index the folder they point to"),
    ("folder nested deeper", "index a deeper folder directly"),
)

PathArgument = Annotated[
    Path | None,
    typer.Argument(
        metavar="[PATH]",
        help="Folder of Markdown, text and PDF files to index (default: the bundled "
        "sample corpus about this project).",
        show_default=False,
        exists=True,
        file_okay=False,
    ),
]
AddOption = Annotated[
    bool,
    typer.Option(
        "--add",
        help="Index PATH beside the folders already in the index (their documents stay).",
    ),
]
ReplaceOption = Annotated[
    bool,
    typer.Option(
        "--replace",
        help="Make the index hold PATH only: documents of other folders are removed.",
    ),
]
ExcludeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude",
        metavar="GLOB",
        help="Leave out paths matching GLOB, in .gitignore syntax, relative to PATH "
        "(node_modules, '*.log', 'drafts/'); repeatable.",
        show_default=False,
    ),
]
NoGitignoreOption = Annotated[
    bool,
    typer.Option(
        "--no-gitignore",
        help="Index what the folder's .gitignore files leave out (they are honoured by default).",
    ),
]


def index(
    path: PathArgument = None,
    index_file: options.IndexOption = None,
    config: options.ConfigOption = None,
    add: AddOption = False,
    replace_: ReplaceOption = False,
    exclude: ExcludeOption = None,
    no_gitignore: NoGitignoreOption = False,
    json_output: options.JsonOption = False,
) -> None:
    """Build or update the local index of PATH.

    Unchanged files are skipped by content hash, changed files are chunked again and deleted files
    are removed. Searches may run while the index is updated. An index can hold several folders:
    when it holds another folder's documents, say --add (keep them) or --replace (remove them).
    Everything left out is listed with a reason (hidden, unsupported type, excluded, ignored by
    .gitignore, unreadable, too large); the rest is indexed.
    """
    from deerflow.knowledge.providers.local import sample_corpus_path

    if add and replace_:
        cli._fail("--add and --replace are opposite choices; give one of them.", cli.EXIT_USAGE)
    index_path = options.settings_from(config=config, index=index_file).index_path
    root = path if path is not None else sample_corpus_path()
    report = _run(
        _open(index_path),
        root,
        index_path=index_path,
        mode="add" if add else "replace" if replace_ else "update",
        exclude=tuple(exclude or ()),
        gitignore=not no_gitignore,
        quiet=json_output,
    )
    hint = empty_hint(report.root, report.skipped, indexed=_indexed(report))
    if json_output:
        cli._print_json(_report_json(report, hint))
    else:
        _show_report(report, hint)


def _open(index_path: Path) -> LocalProvider:
    from deerflow.knowledge.providers.local import LocalProvider

    try:
        return LocalProvider(index_path)
    except ProviderError as exc:
        cli._fail(str(exc), cli.EXIT_USAGE)


def _run(
    provider: LocalProvider,
    root: Path,
    *,
    index_path: Path,
    mode: IndexMode,
    exclude: tuple[str, ...],
    gitignore: bool,
    quiet: bool,
) -> IndexReport:
    """One index run behind a progress bar on stderr, its failures turned into exit codes."""
    from deerflow.knowledge.providers.local import FolderChoiceNeeded, IndexProgress

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # the report lists damaged files
    with cli._quiet_library(), _progress_bar(disable=quiet) as bar:
        task = bar.add_task("index", total=None, current="")

        def advance(event: IndexProgress) -> None:
            bar.update(task, total=event.total, completed=event.done, current=printable(event.path))

        def waiting() -> None:
            cli._err.print(
                cli._safe(f"Another index run is writing {index_path}; waiting for it to finish…"),
                soft_wrap=True,
            )

        try:
            return provider.index(
                root,
                mode=mode,
                exclude=exclude,
                gitignore=gitignore,
                progress=advance,
                waiting=waiting,
            )
        except FolderChoiceNeeded as exc:
            folders = ", ".join(exc.folders)
            cli._fail(
                f"the index {index_path} holds {exc.documents} documents from "
                f"{folders}. Run again with --add to index {Path(root)} beside them, or with "
                "--replace to replace them with it; nothing was changed.",
                cli.EXIT_USAGE,
            )
        except ProviderError as exc:
            cli._fail(str(exc), cli._exit_code(exc))
        except (OSError, sqlite3.Error) as exc:  # the index path: missing folder, not a database
            detail = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            cli._fail(f"cannot write the index {index_path} ({detail}).", cli.EXIT_USAGE)


def _progress_bar(*, disable: bool) -> Progress:
    return Progress(
        TextColumn("[bold]Indexing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[current]}", markup=False),
        console=cli._err,
        transient=True,
        disable=disable,
    )


def _report_json(report: IndexReport, hint: str | None) -> dict[str, Any]:
    return {
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


def _show_report(report: IndexReport, hint: str | None) -> None:
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
    cli._out.print(summary)
    cli._out.print(f"Index file: {cli._safe(report.index_path)}", soft_wrap=True, highlight=False)
    cli._out.print(f"Folder: {cli._safe(report.root)}", soft_wrap=True, highlight=False)
    for folder, count in report.other_folders:
        cli._out.print(
            cli._safe(f"Also in the index: {count} documents from {folder}"),
            soft_wrap=True,
            highlight=False,
        )
    if report.skipped:
        skipped = Table(title="Skipped files", title_style="yellow")
        skipped.add_column("Path")
        skipped.add_column("Reason")
        for item in report.skipped:
            skipped.add_row(cli._safe(item.path), cli._safe(item.reason))
        cli._out.print(skipped)
    if hint is not None:
        cli._err.print(cli._safe(f"Warning: {hint}"), style="yellow", soft_wrap=True)


def _indexed(report: IndexReport) -> int:
    return len(report.added) + len(report.updated) + len(report.unchanged)


def empty_hint(root: str, skipped: Sequence[SkippedFile], *, indexed: int) -> str | None:
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
