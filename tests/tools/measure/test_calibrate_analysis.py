"""The calibration's arithmetic on hand-written event logs (no processes)."""

import math

import pytest

from coadapt.tools.measure.calibrate_analysis import (
    MIN_COLOCATION_SAMPLES,
    charged,
    colocation_factors,
    eval_gaps,
    first_step_wall,
    merge_points,
    segments,
    steady,
    step_point,
)
from coadapt.world.costs import StepPoint


def obs(t: float, run_step: int, step: float = 0.1, sync: float = 0.02, accum: int = 0,
        workers: int = 1, bsz: int = 32) -> dict:
    return {"kind": "observation", "t": t, "run_step": run_step, "step_time": step,
            "sync_time": sync, "accum_steps": accum, "workers": workers, "local_bsz": bsz}


def launch(kind: str, t0: float, n: int, **kw) -> list[dict]:
    return [{"kind": kind, "t": t0}] + [obs(t0 + 0.1 * (i + 1), i + 1, **kw) for i in range(n)]


def test_segments_split_by_launch_and_ignore_what_precedes_the_first():
    events = [{"kind": "header"}, *launch("start", 0, 5), *launch("restart", 10, 6)]
    segs = segments(events)
    assert [len(s) for s in segs] == [6, 7]
    assert segs[1][0]["kind"] == "restart"


def test_steady_skips_warmup_and_respects_the_window():
    seg = launch("start", 0, 6, step=0.1)
    seg[1]["step_time"] = 9.0  # warm-up: not steady
    assert steady(seg) == pytest.approx(0.1)
    assert math.isnan(steady(seg, lo=100.0))
    assert first_step_wall(seg, wall0=1000.0) == pytest.approx(1000.1)


def test_eval_gap_is_the_pause_around_a_validation_less_a_step():
    seg = [obs(1.0, 1), obs(1.1, 2), {"kind": "validation", "t": 1.2}, obs(1.6, 3)]
    assert eval_gaps(seg, 0.1) == pytest.approx([0.4])


def test_step_point_is_one_synchronizing_step_and_repeats_merge():
    seg = launch("start", 0, 8, step=0.5, sync=0.1, accum=1, workers=2, bsz=64)
    p = step_point(seg)
    assert (p.workers, p.micro, p.samples) == (2, 64, 5)
    assert p.step == pytest.approx(0.1 + 0.4 / 2)
    merged = merge_points([p, StepPoint(2, 64, 0.5, 0.1, 3), StepPoint(1, 32, 0.2, 0.0, 4)])
    assert [(m.workers, m.micro, m.samples) for m in merged] == [(1, 32, 4), (2, 64, 8)]


def test_colocation_is_charged_only_beyond_the_noise():
    alone = [1.0, 1.01, 0.99, 1.0]
    assert charged(alone, [1.5] * (MIN_COLOCATION_SAMPLES - 1)) == 1.0  # too few samples
    assert charged(alone, [1.5, 1.52, 1.49, 1.51, 1.5]) == pytest.approx(1.5)
    assert charged(alone, [0.9, 1.1, 1.0, 0.95, 1.05]) == 1.0  # within the noise
    f = colocation_factors(["a"], {"a": alone}, {("a", "a"): [1.5, 1.52, 1.49, 1.51, 1.5]})
    assert f["a"]["a"] == f["a"]["any"] == pytest.approx(1.5)
