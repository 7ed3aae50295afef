"""The engine's records and run coordination on PostgreSQL, shared by several gateway processes.

``_pgruns`` is the run coordinator (tables, advisory locks, ``LISTEN``/``NOTIFY``) and
``_pgthreads`` the thread records with their search in SQL. It builds on the engine (``engine``)
and the wire (``wire``) and imports nothing from the API. Its modules are private.
"""

__all__: list[str] = []
