"""Helpers for the plugin tests: a registry restored after each test, and
policy files written to a temporary folder."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from coadapt.policies import PRIMARY, REGISTRY
from coadapt.policies.plugins import load_entry_points

GOOD = '''
from dataclasses import dataclass, field
from typing import Literal

from coadapt.policies import Assignment


class Bar:
    pass


class Good:
    """Everyone at its request, in submission order."""

    name = "{name}"
    uses_oracle = False

    @dataclass(frozen=True)
    class Options:
        limit: int = field(default=0, metadata={{"help": "most slots per job (0: its request)"}})
        scale: float = 1.0
        greedy: bool = False
        mode: Literal["fifo", "lifo"] = "fifo"
        label: str | None = None

    def __init__(self, config):
        self.options = config.options_for(self)
        if self.options.limit < 0:
            raise ValueError("limit must be >= 0")

    def decide(self, snap):
        return {{}}
'''


@pytest.fixture
def clean_registry() -> Iterator[None]:
    """The registry as the package left it, after the test (plugins it loaded dropped)."""
    saved, primary = dict(REGISTRY), list(PRIMARY)
    load_entry_points.cache_clear()
    yield
    REGISTRY.clear()
    REGISTRY.update(saved)
    PRIMARY[:] = primary
    load_entry_points.cache_clear()


def write(folder: Path, filename: str, source: str) -> Path:
    path = folder / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip())
    return path


def good_policy(folder: Path, name: str = "good-one", filename: str = "good.py") -> Path:
    return write(folder, filename, GOOD.format(name=name))
