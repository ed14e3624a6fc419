"""Regression against the Pollux paper's simulator (skipped without its data)."""

from pathlib import Path

import pytest

from coadapt.runs.settings import RunSettings
from coadapt.runs.simulate import simulate_policy
from coadapt.world.cluster import ClusterSpec
from coadapt.world.workload import Workload, load_workload
from coadapt.world.world import World

SETTINGS = RunSettings(ClusterSpec.parse("16x4"), show_progress=False, fairness=False)


def test_tiresias_matches_reference_on_workload_6(reference_dir, reference_apps, tmp_path):
    apps = reference_apps
    wl = load_workload(str(reference_dir / "workloads" / "workload-6.csv"), set(apps))
    s = simulate_policy(World.build(apps, SETTINGS.cluster), wl, "tiresias", SETTINGS, tmp_path)
    assert s["completed"] == 160
    assert s["avg_jct"] == pytest.approx(3469.7, rel=0.02)  # reference simulator: 3469.69 s; ours 3492


def test_pollux_beats_tiresias_on_a_light_slice(reference_dir, reference_apps, tmp_path):
    apps = reference_apps
    wl = load_workload(str(reference_dir / "workloads" / "workload-6.csv"), set(apps))
    small = [j for j in wl.jobs if j.application in ("cifar10", "ncf", "bert")][:30]
    sub = Workload("w6-slice", Path(wl.path), tuple(small))
    world = World.build(apps, SETTINGS.cluster)
    pol = simulate_policy(world, sub, "pollux", SETTINGS, tmp_path / "p")
    tir = simulate_policy(world, sub, "tiresias", SETTINGS, tmp_path / "t")
    assert pol["completed"] == tir["completed"] == len(small)
    assert pol["avg_jct"] < tir["avg_jct"]
