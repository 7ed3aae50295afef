"""Shared pytest configuration: the real LightRAG server fixtures (tests/live/fixtures.py)."""

pytest_plugins = ["tests.live.fixtures"]
