"""The gateway's wire: how messages, states and checkpoints become bytes, and nothing else.

``_wire`` encodes what the API answers and the SSE frames carry (each message once per thread);
``_serde`` is LangGraph's checkpoint serializer that encodes each message once. The bottom part
of the gateway: it imports none of the others, and every other part may use it. Its modules are
private; the gateway's face (``deerflow.knowledge.server``) names what is public.
"""

__all__: list[str] = []
