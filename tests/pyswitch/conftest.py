"""Fixtures for the Python switch tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bmv2.pyswitch import Switch

from .util import program_json


@pytest.fixture
def load() -> Callable[..., Switch]:
    """Build a Switch running one of the test programs."""

    def make(name: str, **kwargs: object) -> Switch:
        return Switch(program_json(name), **kwargs)  # type: ignore[arg-type]

    return make
