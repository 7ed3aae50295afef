"""Integrations with agent hosts that load tools by import path (DeerFlow: ``deerflow``)."""

__all__: list[str] = []
