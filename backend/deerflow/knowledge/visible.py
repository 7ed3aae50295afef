"""``deerflow.knowledge.visible``: the documented import path of :func:`visible_text`.

Showing invisible format characters is one of the contract's text rules, so it lives in
:mod:`deerflow.knowledge.text` with the others; this module keeps the import path that earlier
code and contracts/README.md §8 name working.
"""

from deerflow.knowledge.text import INVISIBLE_FORMAT_RANGES, visible_text

__all__ = ["INVISIBLE_FORMAT_RANGES", "visible_text"]
