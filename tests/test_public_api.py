"""The public surface is a tested artifact: sorted, complete and importable."""

from __future__ import annotations

import importlib
import pkgutil

import deerflow.knowledge as knowledge


def _public_modules() -> list[str]:
    names = ["deerflow.knowledge"]
    for info in pkgutil.walk_packages(knowledge.__path__, "deerflow.knowledge."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def _isort_key(name: str) -> tuple[int, str]:
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_is_sorted_and_resolves() -> None:
    for name in _public_modules():
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", None)
        assert exported is not None, f"{name} has no __all__"
        # ruff's RUF022 order: CONSTANTS, then Classes, then functions, each sorted.
        assert exported == sorted(exported, key=_isort_key), name
        for attribute in exported:
            assert hasattr(module, attribute), f"{name}.{attribute}"


def test_package_exports_every_public_name_of_the_core() -> None:
    for module_name in ("contract", "ids", "envelope", "citations"):
        module = importlib.import_module(f"deerflow.knowledge.{module_name}")
        public = {n for n in dir(module) if not n.startswith("_")} & set(module.__all__)
        assert public == set(module.__all__)
    assert len(knowledge.__all__) == len(set(knowledge.__all__))
