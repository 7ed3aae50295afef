"""Provider settings checked once per upstream (``providers/_service.py``), never echoing values."""

from __future__ import annotations

import pytest

from deerflow.knowledge.providers._service import MAX_API_KEY_CHARS, MAX_TIMEOUT_SECONDS, Service
from deerflow.knowledge.providers.errors import ProviderConfigError, ProviderQueryError

SERVICE = Service(name="Svc", provider="svc")
SECRET = "hunter2-SECRET"


def test_errors_name_the_service_and_the_setting_but_not_the_value() -> None:
    with pytest.raises(ProviderConfigError) as info:
        SERVICE.base_url(f"http://user:{SECRET}@host")
    assert str(info.value).startswith("Invalid Svc base_url: ") and SECRET not in str(info.value)
    assert info.value.provider == "svc"
    with pytest.raises(ProviderConfigError, match="Invalid Svc api_key") as key:
        SERVICE.api_key(SECRET + " ")
    assert SECRET not in str(key.value)


def test_limits_hold_exactly_at_the_limit() -> None:
    assert SERVICE.api_key("k" * MAX_API_KEY_CHARS) == "k" * MAX_API_KEY_CHARS
    with pytest.raises(ProviderConfigError):
        SERVICE.api_key("k" * (MAX_API_KEY_CHARS + 1))
    assert SERVICE.timeout(MAX_TIMEOUT_SECONDS) == MAX_TIMEOUT_SECONDS
    with pytest.raises(ProviderConfigError):
        SERVICE.timeout(MAX_TIMEOUT_SECONDS + 0.001)
    assert SERVICE.bounded_int(5, name="n", minimum=1, maximum=5) == 5
    with pytest.raises(ProviderConfigError, match="Invalid Svc n: expected an integer from 1 to 5"):
        SERVICE.bounded_int(6, name="n", minimum=1, maximum=5)


def test_search_arguments_are_the_callers_fault() -> None:
    SERVICE.search_arguments("q" * 10, None, max_query_chars=10)
    with pytest.raises(ProviderQueryError, match="too long for Svc"):
        SERVICE.search_arguments("q" * 11, None, max_query_chars=10)
    with pytest.raises(ProviderQueryError):
        SERVICE.search_arguments(" \u3000", None, max_query_chars=10)
    with pytest.raises(ProviderQueryError):
        SERVICE.search_arguments("q", 0, max_query_chars=10)
