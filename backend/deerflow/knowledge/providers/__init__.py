"""Retrieval providers: LightRAG, RAGFlow and the embedded local index (the only modules with I/O,
besides the gateway and the CLI). Import the one you need; nothing is imported eagerly."""

__all__: list[str] = []
