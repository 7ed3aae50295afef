"""The run engine: threads and runs, with no HTTP in it.

``_manager`` runs a process's runs; ``_coordination`` agrees with other processes (alone here, or
``postgres`` on a shared database); ``_records`` keeps the thread and run records,
``_threadmeta`` their metadata, ``_streaming`` a run's events, ``_runwrites`` its checkpoint
writes, ``_runcontext`` its ``context``; ``_values`` checks caller-written values and
``_runplan`` turns a run request into a ``RunPlan``. It raises the domain errors of
``server/errors.py`` and the refusals of ``_values``; the API (``api``) turns both into
statuses. The engine never imports the API, FastAPI or Starlette (``tests/test_layers.py``
checks it), so each piece is tested without a web stack. Its modules are private.
"""

__all__: list[str] = []
