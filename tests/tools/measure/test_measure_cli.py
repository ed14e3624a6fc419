"""``coadapt profile`` argument handling (no measuring)."""

from __future__ import annotations

import argparse

import pytest

from coadapt.cli.profile import register, settings_from_args


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["profile", *argv])


def test_defaults_full_and_quick() -> None:
    full = settings_from_args(_parse())
    assert not full.quick and full.grid.repeats >= 2 and full.seeds == 3
    assert full.budget_s == pytest.approx(43 * 60)  # timing grid included; < 45 min
    quick = settings_from_args(_parse("--quick", "--workers-max", "1", "--repeats", "3"))
    assert quick.quick and quick.grid.workers_max == 1 and quick.grid.repeats == 3
    assert quick.seeds == 1 and quick.budget_s < 5 * 60


@pytest.mark.parametrize("argv, message", [
    (("--types", "nope"), "unknown job type"),
    (("--budget", "0"), "--budget: must be positive"),
])
def test_bad_input_exits_2(argv: tuple[str, ...], message: str,
                           capsys: pytest.CaptureFixture[str]) -> None:
    args = _parse(*argv)
    assert args.func(args) == 2
    assert message in capsys.readouterr().err
