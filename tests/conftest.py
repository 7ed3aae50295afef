"""Shared pytest fixtures (tests/live/fixtures.py): the real LightRAG server, PostgreSQL clusters."""

pytest_plugins = ["tests.live.fixtures"]
