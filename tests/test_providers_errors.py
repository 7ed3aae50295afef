"""The provider exception family: each class names whose fault a failure is."""

from __future__ import annotations

from deerflow.knowledge.providers.errors import (
    ProviderConfigError,
    ProviderError,
    ProviderQueryError,
    SettingsError,
    UpstreamAuthError,
    UpstreamError,
    UpstreamNotFoundError,
    UpstreamRejectedError,
    UpstreamResponseError,
    UpstreamServerError,
    UpstreamTimeoutError,
    UpstreamUnreachableError,
)


def test_error_classes_name_the_fault() -> None:
    assert issubclass(ProviderConfigError, ValueError)
    assert issubclass(ProviderQueryError, ValueError)
    for cls in (
        UpstreamAuthError,
        UpstreamNotFoundError,
        UpstreamRejectedError,
        UpstreamResponseError,
        UpstreamServerError,
        UpstreamTimeoutError,
        UpstreamUnreachableError,
    ):
        assert issubclass(cls, UpstreamError)
        assert issubclass(cls, ProviderError)
        assert not issubclass(cls, ProviderConfigError)
    assert UpstreamTimeoutError.retryable and UpstreamServerError.retryable
    assert not UpstreamAuthError.retryable


def test_settings_errors_are_config_errors_without_a_provider() -> None:
    error = SettingsError("Unknown provider.")
    assert isinstance(error, ProviderConfigError)
    assert error.provider == "settings" and str(error) == "Unknown provider."
