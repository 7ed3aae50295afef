"""The provider exception family, where callers import it: ``deerflow.knowledge.providers.errors``.

The classes live in the rank-0 :mod:`deerflow.knowledge._provider_errors` (the pure parsers, the
settings and the tool raise or catch them below the providers' layer); this is their public
spelling, the same class objects. Covered by tests/test_providers_errors.py.
"""

from deerflow.knowledge import _provider_errors
from deerflow.knowledge._provider_errors import *  # noqa: F403 - the face re-exports every name

__all__ = _provider_errors.__all__
