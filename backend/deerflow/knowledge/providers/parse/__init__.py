"""What the providers' upstreams and documents say, read without I/O: the pure half of providers.

The provider modules (:mod:`deerflow.knowledge.providers.lightrag`,
:mod:`deerflow.knowledge.providers.ragflow`, the local index) send requests and read files; what
the answers and the text mean is decided here, from plain values, so every rule can be fed
captured bodies and tested without a server: LightRAG's ``/query/data`` answer
(:mod:`~deerflow.knowledge.providers.parse.lightrag`), RAGFlow's envelopes
(:mod:`~deerflow.knowledge.providers.parse.ragflow`), what both share (``_reply``: error details,
chunk walks, the decoded reply), the local index's sentence chunker
(:mod:`~deerflow.knowledge.providers.parse.chunking`) and the ``.gitignore`` rules that leave
paths out of it (``_ignore``, on git's matcher rebuilt in ``_wildmatch``). Nothing here imports
httpx, a database or a file API; ``tests/test_layers.py`` checks it.

This face imports nothing: the local index's reader child imports the chunker through it and must
not load the parsers (nor pydantic) on its critical path. Import the module you need.
"""

__all__: list[str] = []
