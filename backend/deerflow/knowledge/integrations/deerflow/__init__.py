"""deerflow-knowledge inside DeerFlow: ``use:``-able tools, a startup check and a trust boundary.

* ``local``, ``lightrag``, ``ragflow`` — each a module-level ``knowledge_search_tool`` for a
  ``tools:`` entry of DeerFlow's ``config.yaml``; settings are that entry's extra keys, under
  DeerFlow's own names, read when the tool is called.
* ``extension`` — the ``deerflow.extensions`` entry point ``deerflow extensions install`` needs;
  it checks the configured entries once when DeerFlow's gateway starts.
* ``boundary`` / ``gateway`` — an ASGI wrapper that strips caller-written evidence from every
  request body DeerFlow's gateway would store or run, and DeerFlow's app wrapped in it.

Nothing here imports DeerFlow at import time: DeerFlow's modules are looked up when a tool runs or
the gateway wrapper is loaded, so these modules import (and test) without DeerFlow installed.
Each module names the test that covers it; ``tests/integration/deerflow/test_install.py`` imports
this package inside DeerFlow's real backend, and the tests beside it run DeerFlow's UI on it.
"""

__all__: list[str] = []
