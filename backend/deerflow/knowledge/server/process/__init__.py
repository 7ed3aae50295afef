"""The gateway as a process: wiring a provider and a model into an app, and serving it.

``_wiring`` opens the checkpointer and the store and builds the ``GatewayConfig`` (choosing the
run coordinator: in this process or ``postgres``); ``_serve`` runs the app under uvicorn, the
only code that tunes the process; ``_listen`` makes its listening socket and ``_connections``
guards its connections. The top part: it may use every other part, and none uses it. Its
modules are private; ``deerflow.knowledge.server`` names what is public.
"""

__all__: list[str] = []
