"""Kinds of node: recipes, measured speeds, and the world's truth per kind."""

import numpy as np
import pytest
from toyprofile import make_toy

from coadapt.world.cluster import ClusterSpec
from coadapt.world.kinds import (
    KindError,
    KindFactor,
    KindSpeeds,
    load_kind_speeds,
    load_kinds,
)
from coadapt.world.world import World


def test_shipped_kinds_are_recipes_not_speeds():
    kinds = load_kinds()
    assert {"default", "native", "legacy", "half"} <= set(kinds)
    assert kinds["legacy"].env() == {"ONEDNN_MAX_CPU_ISA": "SSE41",
                                     "ATEN_CPU_CAPABILITY": "default"}
    assert kinds["half"].cpu_quota == 0.5 and kinds["half"].env() == {}
    assert not kinds["native"].emulated and kinds["half"].emulated


def test_user_kinds_file_adds_and_reports_bad_fields(tmp_path):
    good = tmp_path / "k.toml"
    good.write_text('[kind.slow]\ncpu_quota = 0.25\n')
    assert load_kinds(good)["slow"].cpu_quota == 0.25
    bad = tmp_path / "bad.toml"
    bad.write_text('[kind.slow]\ncpu_qouta = 0.25\n')
    with pytest.raises(KindError, match=r"bad.toml: \[kind.slow\] unknown field\(s\) cpu_qouta"):
        load_kinds(bad)
    bad.write_text('[kind.slow]\ncpu_quota = 3\n')
    with pytest.raises(KindError, match="cpu_quota 3"):
        load_kinds(bad)
    bad.write_text('[kind.slow]\nisa = 4\n')
    with pytest.raises(KindError, match="field 'isa' must be a str"):
        load_kinds(bad)
    with pytest.raises(KindError, match="not found"):
        load_kinds(tmp_path / "missing.toml")


def test_kind_speeds_round_trip_and_errors(tmp_path):
    speeds = KindSpeeds({"toy": {"native": KindFactor(1.1, 1.0), "legacy": KindFactor(3.3, 2.0)}})
    back = load_kind_speeds(speeds.write(tmp_path / "k.json"))
    assert back.factors == speeds.factors
    assert back.relative("toy", "legacy") == pytest.approx((3.0, 2.0))
    (tmp_path / "bad.json").write_text('{"format": "coadapt-kind-speeds", "factors": '
                                       '{"toy": {"legacy": {"compute": -1, "sync": 1}}}}')
    with pytest.raises(KindError, match=r"bad.json: factors.toy.legacy: compute must be > 0"):
        load_kind_speeds(tmp_path / "bad.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(KindError, match="bad.json:1: not JSON"):
        load_kind_speeds(tmp_path / "bad.json")


def _world(cluster: str, speeds: KindSpeeds | None = None) -> World:
    return World.build({"toy": make_toy()}, ClusterSpec.parse(cluster), kind_speeds=speeds)


def test_a_cpu_kind_scales_compute_and_sync_by_its_measured_factors():
    speeds = KindSpeeds({"toy": {"native": KindFactor(1.0, 1.0), "legacy": KindFactor(3.0, 2.0)}})
    w = _world("2x2:native,2x2:legacy", speeds)
    step, sync = w.truth("toy", "native").throughput((2,), 32)
    lstep, lsync = w.truth("toy", "legacy").throughput((2,), 32)
    assert lsync == pytest.approx(2 * sync)
    assert lstep - lsync == pytest.approx(3 * (step - sync))
    assert w.truth("toy", "native") is w.truth("toy")  # plain nodes: the profile itself
    boot = w.kind_speed()["toy"]
    assert boot["native"] / boot["legacy"] == pytest.approx(3.0)  # one worker: compute only
    fast, _ = w.train_seconds("toy", 2, np.array([64]), kind="native")
    slow, _ = w.train_seconds("toy", 2, np.array([64]), kind="legacy")
    assert 2.0 < slow[0] / fast[0] < 3.0


def test_a_kind_nobody_measured_is_an_error_that_says_what_to_do():
    with pytest.raises(KindError, match="kind 'legacy' for job type 'toy'.*calibrate --quick"):
        _world("2x2:native,2x2:legacy")


def test_one_kind_has_no_bootstrap_and_the_default_truth():
    w = _world("4x2")
    assert w.kind_speed() == {} and not w.heterogeneous
    assert w.truth("toy", "default") is w.truth("toy")


def test_a_bootstrap_error_is_drawn_per_type_and_kind_from_the_seed_and_spares_the_truth():
    speeds = KindSpeeds({"toy": {"native": KindFactor(1.0, 1.0), "legacy": KindFactor(3.0, 2.0)}})
    w = _world("2x2:native,2x2:legacy", speeds)
    exact = w.kind_speed()["toy"]
    off = w.kind_speed(0.5, seed=7)["toy"]
    assert off == w.kind_speed(0.5, seed=7)["toy"]  # the seed decides
    assert off != w.kind_speed(0.5, seed=8)["toy"]
    logs = [np.log(off[k] / exact[k]) for k in ("native", "legacy")]
    assert logs[0] != logs[1] and all(0 < abs(x) < 0.5 * 5 for x in logs)
    # a small error scales the same draws: exp(E z) with the same z
    small = w.kind_speed(0.05, seed=7)["toy"]
    assert np.log(small["legacy"] / exact["legacy"]) == pytest.approx(logs[1] / 10)
    assert w.kind_speed(0.0, seed=7)["toy"] == exact
    step, _ = w.truth("toy", "legacy").throughput((2,), 32)
    assert step == _world("2x2:native,2x2:legacy", speeds).truth("toy", "legacy").throughput((2,), 32)[0]
    with pytest.raises(ValueError, match="bootstrap-error"):
        w.kind_speed(-0.1)


def test_a_world_under_another_calibration_keeps_its_kinds():
    speeds = KindSpeeds({"toy": {"native": KindFactor(1.0, 1.0), "legacy": KindFactor(3.0, 2.0)}})
    w = _world("2x2:native,2x2:legacy", speeds)
    again = w.with_costs(None)
    assert again.kind_speeds is speeds and again.kind_speed() == w.kind_speed()
    assert again.truth("toy", "legacy").throughput((2,), 32) == w.truth("toy", "legacy").throughput(
        (2,), 32)
    assert set(again.limits) == set(w.limits) and again.study is w.study
