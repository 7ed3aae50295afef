"""``python -m deerflow.knowledge.cli``: the same command line as the ``deerflow-knowledge`` script.

``tests/test_cli.py`` runs it this way in the tests that need a process of their own.
"""

from deerflow.knowledge.cli import main

main()
