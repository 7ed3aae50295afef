"""The provider exception family, named by whose fault a failure is (docs/RATIONALE.md#errors).

Callers import it as :mod:`deerflow.knowledge.providers.errors`; the classes live here, in the
rules, because the pure parsers, the settings and the tool raise or catch them below the
providers' layer. Covered by tests/test_providers_errors.py.

::

    ProviderError                       str(error) is safe to show a user or a model
    ├── ProviderConfigError             the operator's settings (raised at construction)
    │   └── SettingsError               ... before any provider exists (config file, unknown name)
    ├── ProviderQueryError              the caller's arguments (nothing was sent)
    └── UpstreamError                   the provider service or the network
        ├── UpstreamAuthError           credentials refused
        ├── UpstreamNotFoundError       no such endpoint at base_url
        ├── UpstreamRejectedError       the request was refused as invalid
        ├── UpstreamResponseError       an answer this provider does not understand
        ├── UpstreamServerError         HTTP 5xx                      (retryable)
        ├── UpstreamTimeoutError        no complete answer in time    (retryable)
        └── UpstreamUnreachableError    no connection made or kept    (retryable)

httpx exceptions become these in exactly one place,
:func:`deerflow.knowledge.providers._http.send_json`; what an HTTP status or a service's error
code means is decided by each provider's pure parser in :mod:`deerflow.knowledge.providers.parse`. Every message is safe to show:
it never holds an API key or URL credentials. The classes live apart from the HTTP plumbing so
that code which only handles errors (settings, the tool, the command line) does not import httpx.
"""

from __future__ import annotations

__all__ = [
    "ProviderConfigError",
    "ProviderError",
    "ProviderQueryError",
    "SettingsError",
    "UpstreamAuthError",
    "UpstreamError",
    "UpstreamNotFoundError",
    "UpstreamRejectedError",
    "UpstreamResponseError",
    "UpstreamServerError",
    "UpstreamTimeoutError",
    "UpstreamUnreachableError",
]


class ProviderError(Exception):
    """Base of every provider failure. ``str(error)`` is a safe, user-facing message."""

    #: Whether the same call may succeed later without a change of settings.
    retryable: bool = False

    def __init__(self, message: str, *, provider: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status_code = status_code

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class ProviderConfigError(ProviderError, ValueError):
    """The operator's settings are invalid (raised at construction, before any request)."""


class SettingsError(ProviderConfigError):
    """The knowledge settings name no usable provider: an unreadable or invalid config file, an
    unknown setting or provider name. Raised before any provider exists, so ``provider`` is
    ``"settings"``."""

    def __init__(self, message: str) -> None:
        super().__init__(message, provider="settings")


class ProviderQueryError(ProviderError, ValueError):
    """The caller's arguments are invalid (blank query, bad limit); nothing was sent."""


class UpstreamError(ProviderError):
    """The provider service or the network failed the request."""


class UpstreamAuthError(UpstreamError):
    """The service refused the credentials (missing, wrong or insufficient)."""


class UpstreamNotFoundError(UpstreamError):
    """The endpoint does not exist at the configured base URL (wrong URL or old server)."""


class UpstreamRejectedError(UpstreamError):
    """The service refused the request as invalid (validation error, unsupported value)."""


class UpstreamResponseError(UpstreamError):
    """The service answered, but not with something this provider understands."""


class UpstreamServerError(UpstreamError):
    """The service failed internally (HTTP 5xx)."""

    retryable = True


class UpstreamTimeoutError(UpstreamError):
    """No complete answer within the configured timeout."""

    retryable = True


class UpstreamUnreachableError(UpstreamError):
    """No connection could be made or kept (refused, DNS, reset)."""

    retryable = True
