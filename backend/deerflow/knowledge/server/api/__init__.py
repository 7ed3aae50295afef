"""The HTTP API: LangGraph Server's routes over the run engine, and the request edge.

``_app`` makes the FastAPI app; ``_runs``, ``_threads`` and ``_assistants`` are the routes,
``_gateway`` what they share; ``_http`` reads bodies and is the one place errors become statuses;
``_schemas`` are the request bodies and ``_origin`` the guard of hosts and origins. It stands on
the engine (``engine``) and the wire (``wire``); the engine never imports it. Its modules are
private; ``deerflow.knowledge.server`` names what is public.
"""

__all__: list[str] = []
