"""simulate_policy labels its kind and never deletes a live run's log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coadapt.runs.simulate import _refuse_live_log, simulate_policy


def test_a_live_log_is_never_deleted(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text(json.dumps({"t": 0, "kind": "header", "mode": "live"}) + "\n")
    with pytest.raises(ValueError, match="live run"):
        _refuse_live_log(log)
    assert log.exists()


def test_a_simulated_log_may_be_replaced(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text(json.dumps({"t": 0, "kind": "header", "mode": "simulated"}) + "\n")
    _refuse_live_log(log)  # no error


def test_an_unknown_kind_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="kind="):
        simulate_policy(None, {}, "fixed", None, tmp_path, kind="guess")  # type: ignore[arg-type]


def test_a_log_with_an_unreadable_header_is_left_alone(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text('{"t": 0, "kind": "head')  # cut mid-line: whose log it is, nobody knows
    with pytest.raises(ValueError, match="cannot be read"):
        _refuse_live_log(log)
    assert log.read_text() == '{"t": 0, "kind": "head'


def test_an_empty_log_may_be_replaced(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text("")
    _refuse_live_log(log)  # no error
