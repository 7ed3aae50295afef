"""Shared pytest fixtures (tests/live/fixtures.py): the real LightRAG server, PostgreSQL clusters.

Hypothesis runs without its per-example deadline: tests assert behaviour and counted work, never
wall time, and a deadline only turns a busy machine into a failure.
"""

from hypothesis import settings

settings.register_profile("deerflow-knowledge", deadline=None)
settings.load_profile("deerflow-knowledge")

pytest_plugins = ["tests.live.fixtures"]
