"""The engine options: the Pollux-study preset, and flags that win over it."""

from __future__ import annotations

import argparse

import pytest

from coadapt.runs.options import PRESETS, apply_preset, parse_options, settings, world_of
from coadapt.world.workload import JobSpec, Workload

WL = Workload("w", None, (JobSpec("j0", 0.0, "toy", 1, 64),))


def run_settings(argv: list[str]):
    args = parse_options(argv)
    return settings(args, world_of(args, {}, None), WL,
                    show_progress=False)


def test_cpu_defaults_without_a_preset():
    s = run_settings([])
    assert (s.interval, s.restart_delay, s.start_node) == (15.0, 5.0, True)
    assert s.efficiency_truth == "curves"


def test_osdi21_is_the_pollux_study():
    s = run_settings(["--preset", "osdi21"])
    assert s.interval == 60.0 and s.restart_delay == 30.0
    assert s.start_node is False and s.tiresias_threshold == 57600.0
    assert parse_options(["--preset", "osdi21"]).preset == "osdi21"


@pytest.mark.parametrize("order", ["before", "after"])
def test_flags_given_win_over_the_preset_in_either_order(order):
    flags = ["--interval", "15", "--new-jobs", "node", "--tiresias-threshold", "auto",
             "--restart-delay", "4"]
    argv = flags + ["--preset", "osdi21"] if order == "before" else ["--preset", "osdi21"] + flags
    args = parse_options(argv)
    # 15 and 'node' equal the CPU defaults: typed, they still win over the preset
    assert (args.interval, args.new_jobs, args.tiresias_threshold, args.restart_delay) == \
        (15.0, "node", "auto", 4.0)


def test_one_flag_overrides_only_itself():
    s = run_settings(["--restart-delay", "12", "--preset", "osdi21"])
    assert s.restart_delay == 12.0 and s.interval == 60.0 and s.start_node is False


def test_a_namespace_from_a_saved_spec_gets_the_preset():
    spec = {"cluster": "1x2", "bandwidth": 10.0, "latency": 50.0, "interval": None,
            "restart_delay": None, "new_jobs": None, "tiresias_threshold": None, "power": -1.0,
            "seed": 0, "preset": "osdi21"}
    args = apply_preset(argparse.Namespace(**spec))
    assert {k: getattr(args, k) for k in PRESETS["osdi21"]} == PRESETS["osdi21"]
    with pytest.raises(ValueError, match="--preset 'nope'"):
        apply_preset(argparse.Namespace(**{**spec, "preset": "nope"}))


def test_unknown_preset_and_truth_exit_2(capsys):
    for argv in (["--preset", "osdi20"], ["--efficiency-truth", "oracle"]):
        with pytest.raises(SystemExit) as exc:
            parse_options(argv)
        assert exc.value.code == 2
    assert "invalid choice: 'oracle'" in capsys.readouterr().err


def test_efficiency_truth_reaches_the_settings():
    assert run_settings(["--efficiency-truth", "formula"]).efficiency_truth == "formula"


def test_bootstrap_error_reaches_the_settings_and_the_header_only_when_set():
    assert "bootstrap_error" not in run_settings([]).describe()
    s = run_settings(["--bootstrap-error", "0.25", "--seed", "3"])
    assert s.bootstrap_error == 0.25 and s.describe()["bootstrap_error"] == 0.25
    with pytest.raises(ValueError, match="--bootstrap-error -1"):
        run_settings(["--bootstrap-error", "-1"])
