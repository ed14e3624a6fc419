"""The shared fairness yardstick (sim.yardstick): one T_iso per job, for every policy."""

import numpy as np
import pytest
from toyprofile import make_toy, toy_step

from coadapt.eventlog import read_events
from coadapt.metrics import job_table
from coadapt.models.goodput import gain
from coadapt.runs.fairness import Yardstick, _mean_overlap, fair_share
from coadapt.runs.settings import RunSettings
from coadapt.runs.simulate import simulate_policy
from coadapt.world.cluster import ClusterSpec
from coadapt.world.workload import JobSpec, Workload
from coadapt.world.world import World

TOY = {"toy": make_toy()}


def stick(cluster="2x4", interval=60.0, delay=30.0):
    return Yardstick(World.build(TOY, ClusterSpec.parse(cluster)), interval, delay)


def test_fair_share_is_the_floor_of_slots_over_jobs_and_at_least_one():
    assert fair_share(8, 1.0) == 8 and fair_share(8, 3.0) == 2 and fair_share(8, 0.2) == 8
    assert fair_share(8, 20.0) == 1


def test_mean_overlap_counts_the_time_averaged_company():
    # [0, 10] alone for its first half, with [5, 15] for its second: 1.5 on average
    n = _mean_overlap(np.array([0.0, 5.0, 100.0]), np.array([10.0, 15.0, 110.0]))
    assert n == pytest.approx([1.5, 1.5, 1.0])


def test_a_lone_job_gets_its_best_static_configuration_on_the_whole_cluster():
    y = stick()
    f = y.table([JobSpec("j", 10.0, "toy", 1, 32)])["j"]
    assert f["share"] == 8 and f["n"] == pytest.approx(1.0)
    # the toy scales: the best is more than one worker, and it beats the request
    assert f["replicas"] > 1
    step, _ = toy_step(1, 1, 32)
    at_request = 50.0 + 30.0 + 1000 * step / float(gain(1.0, 4.0, 1.0))
    assert f["t_iso"] < at_request
    # the wait for the first round (t=60) and the fixed restart delay are in it
    assert f["t_iso"] == pytest.approx(50.0 + y.best("toy", 8).seconds)


def test_crowding_shrinks_the_share_and_lengthens_t_iso():
    alone = stick().table([JobSpec("a", 0.0, "toy", 1, 32)])["a"]
    crowd = stick().table([JobSpec(f"j{i}", 0.0, "toy", 1, 32) for i in range(4)])
    assert {f["share"] for f in crowd.values()} == {2}  # 4 jobs side by side: 8 / 4
    assert all(f["n"] == pytest.approx(4.0) for f in crowd.values())
    assert all(f["t_iso"] > alone["t_iso"] for f in crowd.values())


def run(tmp_path, policy, jobs):
    wl = Workload("t", tmp_path / "w.csv", tuple(jobs))
    s = RunSettings(ClusterSpec.parse("2x4"), interval=60.0, restart_delay=30.0,
                    show_progress=False)
    simulate_policy(World.build(TOY, s.cluster), wl, policy, s, tmp_path / policy)
    return job_table(list(read_events(tmp_path / policy / "events.jsonl")))


def test_every_policy_is_measured_against_the_same_t_iso(tmp_path):
    jobs = [JobSpec(f"j{i}", 30.0 * i, "toy", 1 + i % 3, 32 * (1 + i % 2)) for i in range(6)]
    tables = {p: run(tmp_path, p, jobs) for p in ("fixed", "pollux", "tiresias")}
    iso = {p: dict(zip(t["job"], t["t_iso"], strict=True)) for p, t in tables.items()}
    assert iso["fixed"] == iso["pollux"] == iso["tiresias"]
    # ... while the schedules (hence JCTs and rho) differ
    jct = {p: tuple(t["jct"]) for p, t in tables.items()}
    assert jct["fixed"] != jct["pollux"]


def test_a_request_below_the_best_configuration_is_unfair_alone(tmp_path):
    """Alone on an empty cluster, fixed runs the one-worker request: slower than
    the job's best static configuration, so rho > 1 (the per-policy yardstick
    gave fixed rho = 1 here by construction)."""
    t = run(tmp_path, "fixed", [JobSpec("j", 0.0, "toy", 1, 32)])
    assert t["rho"][0] > 1.2
