"""Run options checked finite and in range: at the parser (exit 2) for typed
flags, and in ``settings()`` for namespaces built without it (saved specs,
config files), before anything is written; the default horizon; requests
checked against the job types' limits where the workload meets the world."""

from __future__ import annotations

import argparse
import math

import pytest
from toyprofile import make_toy

from coadapt.runs.flags import finite
from coadapt.runs.options import parse_options, settings, world_of
from coadapt.world.workload import JobSpec, Workload, WorkloadError

WL = Workload("w", None, (JobSpec("j0", 0.0, "toy", 1, 64), JobSpec("j1", 100.0, "toy", 2, 64)))


def toy_settings(argv: list[str], workload: Workload = WL):
    args = parse_options(argv)
    return settings(args, world_of(args, {"toy": make_toy()}, None), workload, show_progress=False)


@pytest.mark.parametrize("argv,msg", [
    (["--interval", "nan"], "argument --interval: 'nan': expected a finite number >= 0.001"),
    (["--interval", "inf"], "argument --interval: 'inf': expected a finite number >= 0.001"),
    (["--interval", "1e-9"], "argument --interval: '1e-9': expected a finite number >= 0.001"),
    (["--restart-delay", "nan"], "argument --restart-delay: 'nan': expected a finite number >= 0"),
    (["--restart-delay", "-1"], "argument --restart-delay: '-1'"),
    (["--p", "nan"], "argument --p: 'nan': expected a finite number"),
    (["--p", "inf"], "argument --p: 'inf'"),
    (["--latency", "inf"], "argument --latency: 'inf'"),
    (["--bandwidth", "0"], "argument --bandwidth: '0': expected a finite number > 0"),
    (["--bandwidth", "nan"], "argument --bandwidth: 'nan'"),
    (["--horizon", "0"], "argument --horizon: '0': expected a finite number > 0"),
    (["--horizon", "ten"], "argument --horizon: expected a number, got 'ten'"),
])
def test_typed_flags_out_of_range_exit_2_at_the_parser(capsys, argv, msg):
    with pytest.raises(SystemExit) as exc:
        parse_options(argv)
    assert exc.value.code == 2
    assert msg in capsys.readouterr().err


def test_finite_says_its_range():
    assert finite(0, 10)("10") == 10.0
    with pytest.raises(argparse.ArgumentTypeError, match=r"'11': expected a finite number >= 0 and <= 10"):
        finite(0, 10)("11")


@pytest.mark.parametrize("key,value,msg", [
    ("interval", math.nan, "--interval nan: expected a finite number >= 0.001"),
    ("interval", 1e-9, "--interval 1e-09: expected a finite number >= 0.001"),
    ("interval", math.inf, "--interval inf"),
    ("restart_delay", math.nan, "--restart-delay nan"),
    ("restart_delay", -5.0, "--restart-delay -5.0: expected a finite number >= 0"),
    ("tiresias_threshold", "nan", "--tiresias-threshold nan: expected a finite number >= 0"),
    ("tiresias_threshold", "-5", "--tiresias-threshold -5.0"),
    ("tiresias_threshold", "inf", "--tiresias-threshold inf"),
    ("tiresias_threshold", "lots", "--tiresias-threshold 'lots': expected 'auto' or slot-seconds"),
    ("power", math.nan, "--p nan: expected a finite number"),
    ("power", -math.inf, "--p -inf"),
    ("observation_noise", math.nan, "--observation-noise must be a finite number"),
    ("bootstrap_error", math.nan, "--bootstrap-error nan"),
    ("horizon", -1.0, "--horizon -1.0: expected a finite number > 0"),
    ("horizon", math.nan, "--horizon nan"),
])
def test_settings_refuse_values_that_bypassed_the_parser(key, value, msg):
    args = parse_options([])
    setattr(args, key, value)
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace("+", r"\+")):
        settings(args, world_of(args, {"toy": make_toy()}, None), WL, show_progress=False)


def test_network_values_that_bypassed_the_parser_are_refused():
    for key, value in (("bandwidth", math.inf), ("latency", math.nan), ("bandwidth", 0.0)):
        args = parse_options([])
        setattr(args, key, value)
        with pytest.raises(ValueError, match="network: bandwidth must be > 0 Gbit/s"):
            world_of(args, {"toy": make_toy()}, None)


def test_the_default_horizon_is_a_multiple_of_the_estimated_work():
    s = toy_settings([])
    assert s.horizon is not None and math.isfinite(s.horizon)
    assert s.horizon > 20 * 100.0 + 86400  # last submit 100 s, plus the jobs' isolated time
    assert toy_settings(["--horizon", "500"]).horizon == 500.0


def test_requests_beyond_the_type_are_refused_before_any_run():
    wl = Workload("w", None, (JobSpec("big", 0.0, "toy", 1, 10**12),))
    with pytest.raises(WorkloadError, match="field 'batch_size' is 1000000000000 for job big"):
        toy_settings([], wl)
    wl = Workload("w", None, (JobSpec("wide", 0.0, "toy", 10**6, 64),))  # no hang pricing it
    with pytest.raises(WorkloadError, match="field 'num_replicas' is 1000000 for job wide"):
        toy_settings([], wl)


def test_replicas_above_the_cluster_but_within_the_type_are_kept():
    wl = Workload("w", None, (JobSpec("over", 0.0, "toy", 16, 64),))  # 8x2: 16 slots; 2x2: 4
    assert toy_settings(["--cluster", "2x2"], wl).tiresias_threshold > 0
