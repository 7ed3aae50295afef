"""Reading ahead of the local index: batches, the parent's share, and the child process (same
index as in-process reading, failures surfaced, stopped on every way out)."""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deerflow.knowledge.providers.errors import UpstreamError
from deerflow.knowledge.providers.local import (
    IndexProgress,
    LocalProvider,
    _writer,
    sample_corpus_path,
)
from deerflow.knowledge.providers.local import _files as _local_reader
from deerflow.knowledge.providers.local._files import (
    ReaderProcess,
    Settings,
    parent_share,
    read_ahead,
    tasks,
)

IN_PROCESS = None
IN_CHILD = 0


def _write(root: Path, relative: str, data: str | bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def _dump(index: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the index, the full-text index's own tables included."""
    with sqlite3.connect(index) as connection:
        tables = [
            name
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'chunks_fts' "
                "ORDER BY name"
            )
        ]
        dump = {
            table: connection.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
            for table in tables
        }
    dump["meta"] = [row for row in dump["meta"] if row[0] != "root"]
    return dump


class _Spy:
    """Records the reader processes an index run starts (the real ones)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started: list[ReaderProcess] = []
        self.prepared = 0
        start = ReaderProcess.start.__func__  # type: ignore[attr-defined]
        prepare = ReaderProcess.prepare

        def spy_start(cls: type[ReaderProcess], **kwargs: object) -> ReaderProcess:
            child: ReaderProcess = start(cls, **kwargs)
            self.started.append(child)
            return child

        def spy_prepare(child: ReaderProcess, *args: object, **kwargs: object) -> object:
            self.prepared += 1
            return prepare(child, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(ReaderProcess, "start", classmethod(spy_start))
        monkeypatch.setattr(ReaderProcess, "prepare", spy_prepare)

    def all_stopped(self) -> bool:
        return all(child._process.poll() is not None for child in self.started)


def _no_reader_threads() -> bool:
    return not [t for t in threading.enumerate() if t.name.startswith("deerflow-index-")]


@pytest.fixture(autouse=True)
def idle_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests use the child whatever else runs on the machine."""
    monkeypatch.setattr(_local_reader, "spare_core", lambda: True)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> _Spy:
    return _Spy(monkeypatch)


def _many(root: Path, count: int, *, size: int) -> None:
    sentence = "Herons wade in the shallows of the marsh at dawn. "
    for number in range(count):
        text = f"# File {number}\n\n" + sentence * (size // len(sentence))
        _write(root, f"f{number:03d}.md", text)


# --------------------------------------------------------------------------- batches


def test_batches_hold_at_most_task_bytes_and_task_files() -> None:
    assert tasks([4, 4, 2, 5], task_bytes=10, task_files=10) == [range(0, 3), range(3, 4)]
    # One past the byte limit starts a new batch; exactly at it does not.
    assert tasks([4, 4, 3], task_bytes=10, task_files=10) == [range(0, 2), range(2, 3)]
    assert tasks([1] * 7, task_bytes=100, task_files=3) == [range(0, 3), range(3, 6), range(6, 7)]
    # A file larger than a batch is a batch of its own; nothing is a batch of none.
    assert tasks([50, 1, 60], task_bytes=10, task_files=10) == [
        range(0, 1),
        range(1, 2),
        range(2, 3),
    ]
    assert tasks([], task_bytes=10, task_files=10) == []


@given(st.lists(st.integers(0, 50), max_size=40), st.integers(1, 60), st.integers(1, 8))
def test_batches_cover_every_file_once_in_order(sizes: list[int], limit: int, files: int) -> None:
    batches = tasks(sizes, task_bytes=limit, task_files=files)
    assert [i for batch in batches for i in batch] == list(range(len(sizes)))
    for batch in batches:
        assert 1 <= len(batch) <= files
        assert len(batch) == 1 or sum(sizes[i] for i in batch) <= limit


def test_the_parent_share_is_the_first_files_up_to_that_share_of_the_bytes() -> None:
    assert parent_share([10, 10, 10, 10], share=0.5) == 2
    assert parent_share([10, 10, 10, 10], share=0.49) == 1
    assert parent_share([100, 1, 1], share=0.5) == 0
    assert parent_share([], share=0.5) == 0
    assert parent_share([1, 2, 3], share=1.0) == 3


# --------------------------------------------------------------------------- same index either way


def _index_both(
    root: Path, work: Path, name: str, **kwargs: object
) -> tuple[dict[str, object], dict[str, object]]:
    outcomes = {}
    for mode, child_min_bytes in (("in-process", IN_PROCESS), ("child", IN_CHILD)):
        events: list[IndexProgress] = []
        report = LocalProvider(work / mode / name, **kwargs).index(  # type: ignore[arg-type]
            root, progress=events.append, child_min_bytes=child_min_bytes
        )
        outcomes[mode] = {
            "report": (
                report.added,
                report.updated,
                report.unchanged,
                report.removed,
                report.skipped,
                report.chunks,
                report.chunks_written,
                report.documents,
            ),
            "events": events,
            "rows": _dump(work / mode / name),
        }
    return outcomes["in-process"], outcomes["child"]


_WORDS = st.sampled_from(["heron", "marsh", "dawn", "Reed", "tide", "fish", "mud", "é", "北"])
_TEXT = st.lists(
    st.one_of(_WORDS, st.sampled_from([" ", " ", ". ", "\n", "\n\n", "! "])), max_size=300
).map("".join)
_BROKEN = st.sampled_from([b"\xff\xfe latin", b"nul\x00byte", b"%PDF-1.4 broken"])
_FILE = st.one_of(_TEXT, _TEXT, _BROKEN)


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.dictionaries(
        st.sampled_from(["a.md", "b.txt", "c/d.md", "e.pdf", "f.md"]), _FILE, min_size=2, max_size=5
    ),
    st.dictionaries(st.sampled_from(["a.md", "b.txt", "g.md"]), _FILE, max_size=3),
)
def test_a_child_builds_and_updates_the_same_index_as_this_process(
    tmp_path_factory: pytest.TempPathFactory,
    first: dict[str, str | bytes],
    second: dict[str, str | bytes],
) -> None:
    work = tmp_path_factory.mktemp("same")
    root = work / "docs"
    root.mkdir()
    for relative, data in first.items():
        _write(root, relative, data)
    in_process, child = _index_both(root, work, "i.sqlite", chunk_chars=40, chunk_overlap=10)
    assert child == in_process
    for relative, data in second.items():
        _write(root, relative, data)
    if first:
        (root / sorted(first)[0]).unlink()
    in_process, child = _index_both(root, work, "i.sqlite", chunk_chars=40, chunk_overlap=10)
    assert child == in_process
    assert _no_reader_threads()


def test_the_sample_corpus_with_its_pdf_is_the_same_index_from_a_child(tmp_path: Path) -> None:
    in_process, child = _index_both(sample_corpus_path(), tmp_path, "i.sqlite")
    assert child == in_process
    assert any(row[3] is not None for row in child["rows"]["chunks"])  # type: ignore[index]


def test_the_parent_reads_its_share_and_the_child_the_rest(tmp_path: Path, spy: _Spy) -> None:
    _many(tmp_path / "docs", 40, size=2_000)
    in_process, child = _index_both(tmp_path / "docs", tmp_path, "i.sqlite")
    assert child == in_process
    assert spy.prepared == 1 and spy.all_stopped()


def test_the_child_reads_through_the_folder_that_discovery_opened(
    tmp_path: Path, spy: _Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The child inherits the folder's descriptor: a folder swapped for a link after discovery
    # (here every file's folder, so that the child's share meets it) is refused there too.
    root = tmp_path / "docs"
    _many(root / "sub", 40, size=2_000)
    outside = tmp_path / "outside"
    _many(outside, 40, size=2_000)
    for number in range(40):
        _write(outside, f"f{number:03d}.md", "Wolves howl outside the folder.")
    discover = _writer._discover

    def discover_then_swap(folder: Path, **kwargs: object) -> object:
        found = discover(folder, **kwargs)  # type: ignore[arg-type]
        (root / "sub").rename(tmp_path / "moved-away")
        (root / "sub").symlink_to(outside, target_is_directory=True)
        return found

    monkeypatch.setattr(_writer, "_discover", discover_then_swap)
    provider = LocalProvider(tmp_path / "i.sqlite")
    report = provider.index(root, child_min_bytes=IN_CHILD)
    assert spy.prepared == 1 and spy.all_stopped()
    assert report.added == () and len(report.skipped) == 40
    assert {s.reason for s in report.skipped} == {
        "the folder 'sub' on its path: symbolic link (not followed)"
    }
    assert provider.search_sync("wolves").hits == ()
    provider.close()


# --------------------------------------------------------------------------- when a child is used


def test_a_child_only_from_child_min_bytes(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    _many(root, 3, size=1_000)
    total = sum(path.stat().st_size for path in root.iterdir())
    with pytest.MonkeyPatch.context() as patch:
        spy = _Spy(patch)
        LocalProvider(tmp_path / "a.sqlite").index(root, child_min_bytes=total)
        assert spy.prepared == 1
        LocalProvider(tmp_path / "b.sqlite").index(root, child_min_bytes=total + 1)
        LocalProvider(tmp_path / "c.sqlite").index(root, child_min_bytes=None)
        assert spy.prepared == 1 and len(spy.started) == 1 and spy.all_stopped()


@pytest.mark.parametrize(
    ("cores", "load", "spare"), [(1, 0.0, False), (2, 0.0, True), (2, 1.9, True), (2, 2.0, False)]
)
def test_a_child_needs_a_second_core_that_the_load_leaves_idle(
    monkeypatch: pytest.MonkeyPatch, cores: int, load: float, spare: bool
) -> None:
    monkeypatch.undo()  # the real spare_core
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(cores)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, 0.0, 0.0))
    assert _local_reader.spare_core() is spare


def test_on_a_busy_machine_the_run_stays_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: _Spy
) -> None:
    _many(tmp_path / "docs", 3, size=1_000)
    monkeypatch.setattr(_local_reader, "spare_core", lambda: False)
    assert (
        LocalProvider(tmp_path / "i.sqlite").index(tmp_path / "docs", child_min_bytes=0).documents
        == 3
    )
    assert spy.started == []


def test_child_min_bytes_is_checked(tmp_path: Path) -> None:
    from deerflow.knowledge.providers.errors import ProviderConfigError

    for bad in (-1, 1.5, "1", True):
        with pytest.raises(ProviderConfigError, match="child_min_bytes"):
            LocalProvider(tmp_path / "i.sqlite").index(tmp_path, child_min_bytes=bad)  # type: ignore[arg-type]


def test_without_an_interpreter_to_start_the_run_stays_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _many(tmp_path / "docs", 3, size=1_000)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    report = LocalProvider(tmp_path / "i.sqlite").index(tmp_path / "docs", child_min_bytes=0)
    assert report.documents == 3
    assert "no reader process" in caplog.text


# --------------------------------------------------------------------------- failures and stops


def _slow_child(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Twelve batches of two files, read ahead at most one batch: the child cannot finish before
    the parent has taken most of them."""
    _many(root, 24, size=400_000)
    monkeypatch.setattr(_writer, "_READ_AHEAD_BYTES", 1)


def test_a_killed_child_is_a_clear_error_and_the_index_is_left_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: _Spy
) -> None:
    root = tmp_path / "docs"
    _write(root, "old.md", "Kingfishers dive for minnows.")
    provider = LocalProvider(tmp_path / "i.sqlite")
    provider.index(root, child_min_bytes=None)
    _slow_child(monkeypatch, root)

    def kill(event: IndexProgress) -> None:
        if event.done == 6:  # the parent read the first three, the child the rest
            os.kill(spy.started[-1].pid, 9)

    with pytest.raises(UpstreamError, match=r"reader process failed \(killed by SIGKILL\)") as err:
        provider.index(root, progress=kill, child_min_bytes=0)
    assert "the index was left as it was" in str(err.value)
    assert [hit.title for hit in provider.search_sync("herons").hits] == []
    assert [hit.title for hit in provider.search_sync("kingfishers").hits] == ["old.md"]
    assert spy.all_stopped() and _no_reader_threads()
    provider.close()


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_an_interrupted_run_stops_the_child_and_rolls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: _Spy, stop: type[BaseException]
) -> None:
    _slow_child(monkeypatch, tmp_path / "docs")
    provider = LocalProvider(tmp_path / "i.sqlite")

    def interrupt(event: IndexProgress) -> None:
        if event.done == 6:
            raise stop

    with pytest.raises(stop):
        provider.index(tmp_path / "docs", progress=interrupt, child_min_bytes=0)
    assert len(spy.started) == 1 and spy.all_stopped() and _no_reader_threads()
    assert spy.started[0]._process.returncode == -9  # stopped mid-run, not left to finish
    assert provider.search_sync("herons").hits == ()
    provider.close()


def test_an_error_in_the_child_is_raised_with_its_message(tmp_path: Path) -> None:
    _many(tmp_path, 2, size=100)
    child = ReaderProcess.start()
    files = [(path, None, path.stat().st_size) for path in sorted(tmp_path.iterdir())]
    bad = Settings(max_bytes=1_000, chunk_chars=1, chunk_overlap=0)  # checked by chunk_text
    with pytest.raises(UpstreamError, match=r"failed \(ProviderConfigError: Invalid chunk_chars"):
        list(child.prepare(files, bad, budget=1_000))
    assert child._process.poll() is not None and _no_reader_threads()


@pytest.mark.parametrize(
    ("boot", "detail"),
    [
        ("import sys; sys.exit(3)", r"exit status 3\)"),
        (
            "raise SystemExit('cannot import the package')",
            "exit status 1: cannot import the package",
        ),
        ("import sys; sys.stdout.buffer.write(b'garbage'); sys.stdout.flush()", "exit status 0"),
    ],
)
def test_a_child_that_dies_or_talks_nonsense_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, boot: str, detail: str
) -> None:
    _many(tmp_path, 2, size=100)
    monkeypatch.setattr(_local_reader, "_BOOT", boot)
    child = ReaderProcess.start()
    files = [(path, None, path.stat().st_size) for path in sorted(tmp_path.iterdir())]
    with pytest.raises(UpstreamError, match=detail):
        list(child.prepare(files, Settings(1_000, 100, 10), budget=1_000))
    child.close()
    assert _no_reader_threads()


def test_the_child_starts_without_the_public_api_or_pydantic() -> None:
    # The child's start-up is on the index's critical path: it imports the reader and what the
    # reader runs (chunking, documents, the record rules), not the package's public API.
    report = (
        "; entry.load(); import json; print(json.dumps([sorted(sys.modules), "
        "[sorted(vars(sys.modules[name])) for name in entry.PACKAGES]]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", _local_reader._BOOT_IMPORT + report],
        input=pickle.dumps(list(sys.path)),
        capture_output=True,
        check=True,
    )
    modules, packages = json.loads(result.stdout)
    loaded = set(modules)
    # The packages on the way are registered, not run: none of their __init__ names exist.
    assert len(packages) == 3
    assert all("__all__" not in names and "LocalProvider" not in names for names in packages)
    assert "deerflow.knowledge.providers.parse.chunking" in loaded
    assert "deerflow.knowledge.providers.documents" in loaded
    assert not {"deerflow.knowledge.contract", "deerflow.knowledge.envelope"} & loaded
    assert sorted(m for m in loaded if m.split(".")[0] in {"pydantic", "pydantic_core"}) == []


def test_a_child_closed_before_it_is_used_stops(tmp_path: Path) -> None:
    child = ReaderProcess.start()
    child.close()
    assert child._process.returncode is not None and _no_reader_threads()


def test_a_library_printing_in_the_child_cannot_corrupt_its_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, "a.md", "Herons.")
    noisy = _local_reader._BOOT.replace(
        "entry.main()",
        "r = entry.load(); real = r.prepare; "
        "r.prepare = lambda *a: (print('noise' * 1000), real(*a))[1]; entry.main()",
    )
    assert noisy != _local_reader._BOOT
    monkeypatch.setattr(_local_reader, "_BOOT", noisy)
    child = ReaderProcess.start()
    files = [(tmp_path / "a.md", None, 7)]
    (result,) = list(child.prepare(files, Settings(1_000, 100, 10), budget=1_000))
    assert isinstance(result, _local_reader.Prepared) and result.parts == [(None, "Herons.")]


def test_read_ahead_keeps_order_and_stays_within_its_budget() -> None:
    started: list[int] = []
    consumed: list[int] = []
    ahead: list[int] = []

    def work(item: int) -> int:
        started.append(item)
        ahead.append(len(started) - len(consumed))
        return item * item

    items = list(range(50))
    for item, result in read_ahead(items, work, weight=lambda _: 10, budget=30):
        assert result == item * item
        consumed.append(item)
    # Three results of weight 10 held, one being worked on, plus the one being consumed.
    assert consumed == items and started == items and max(ahead) <= 5


def test_read_ahead_passes_a_result_heavier_than_its_budget_one_at_a_time() -> None:
    started: list[int] = []
    consumed: list[int] = []
    ahead: list[int] = []

    def work(item: int) -> int:
        started.append(item)
        ahead.append(len(started) - len(consumed))
        return item

    for item, _ in read_ahead(list(range(20)), work, weight=lambda _: 99, budget=10):
        consumed.append(item)
    # Never stuck (every item comes through, in order), and never more than one heavy result
    # held: each waits until the previous is taken.
    assert consumed == list(range(20))
    assert max(ahead) <= 3


def test_read_ahead_raises_the_workers_error_in_order_and_stops() -> None:
    started: list[int] = []

    def work(item: int) -> int:
        started.append(item)
        if item == 5:
            raise ValueError("item 5")
        return item

    taken: list[int] = []
    with pytest.raises(ValueError, match="item 5"):
        for item, _ in read_ahead(list(range(100)), work, weight=lambda _: 1, budget=1_000):
            taken.append(item)
    assert taken == [0, 1, 2, 3, 4] and started == list(range(6))  # nothing after the error
    assert not [t for t in threading.enumerate() if t.name.startswith("deerflow-index-read")]
