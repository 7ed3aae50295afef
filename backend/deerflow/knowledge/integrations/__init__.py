"""Integrations with agent hosts that load tools by import path (DeerFlow: ``deerflow``).

Only this docstring lives here; each module below names the test that covers it, and
``tests/integration/deerflow/test_install.py`` imports the package inside DeerFlow's backend.
"""

__all__: list[str] = []
