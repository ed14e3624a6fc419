"""The simulator charging measured live costs, and replays of recorded runs."""

import json

import pytest
from toyprofile import make_toy, toy_step

from coadapt.eventlog import read_events
from coadapt.models.goodput import gain
from coadapt.policies.replay import ReplayPolicy
from coadapt.runs.settings import RunSettings
from coadapt.runs.simulate import simulate_policy
from coadapt.world.cluster import ClusterSpec
from coadapt.world.costs import CostError, LiveCosts, StepPoint, TypeCosts, refine_profiles
from coadapt.world.workload import JobSpec, Workload
from coadapt.world.world import World

COSTS = LiveCosts({"toy": TypeCosts(start={1: 2.0, 2: 3.0}, restart={1: 4.0, 2: 5.0},
                                    eval={1: 0.5, 2: 0.25}, verify=1.5,
                                    colocation={"toy": 1.5})},
                  {"source": "test", "poll_s": 0.02, "live_poll_s": 1.02})
LAG = 0.5  # half the live poll the calibration did not pay
SETTINGS = RunSettings(ClusterSpec.parse("1x2"), interval=60.0, restart_delay=30.0,
                       show_progress=False)


def run(tmp_path, jobs, policy="fixed", costs=COSTS, name="x", settings=SETTINGS):
    wl = Workload("t", tmp_path / "w.csv", tuple(jobs))
    world = World.build({"toy": make_toy()}, settings.cluster, costs=costs)
    s = simulate_policy(world, wl, policy, settings, tmp_path / name)
    return s, list(read_events(tmp_path / name / "events.jsonl"))


def test_a_lone_job_pays_start_validations_and_verification(tmp_path):
    _, events = run(tmp_path, [JobSpec("j", 0.0, "toy", 1, 32)])
    step, _ = toy_step(1, 1, 32)
    rate = float(gain(1.0, 4.0, 1.0)) / step
    # first round at 60, start 2 s, 10 epochs of 100 progress, 9 validation pauses
    # between them, then the last validation and the verification: no restart delay.
    # Half a live poll to launch, one to see the target, one to see the verifier exit.
    assert COSTS.poll_lag == pytest.approx(LAG)
    expected = 60 + 2.0 + 1000 / rate + 9 * 0.5 + 0.5 + 1.5 + 3 * LAG
    done = next(e for e in events if e["kind"] == "complete")
    assert done["t"] == pytest.approx(expected, rel=1e-9)


def test_jobs_sharing_a_node_slow_each_other_by_the_measured_factor(tmp_path):
    alone, _ = run(tmp_path, [JobSpec("a", 0.0, "toy", 1, 32)], name="alone")
    pair, _ = run(tmp_path, [JobSpec("a", 0.0, "toy", 1, 32), JobSpec("b", 0.0, "toy", 1, 32)],
                  name="pair")
    step, sync = toy_step(1, 1, 32)
    slow = sync + (step - sync) * 1.5
    # Both run side by side all along: their training time grows by slow/step.
    overhead = 60 + 2.0 + 10 * 0.5 + 1.5 + 3 * LAG
    assert pair["avg_jct"] - overhead == pytest.approx((alone["avg_jct"] - overhead) * slow / step,
                                                        rel=1e-6)


def test_jobs_on_different_nodes_do_not_slow_each_other(tmp_path):
    two_nodes = RunSettings(ClusterSpec.parse("2x1"), interval=60.0, restart_delay=30.0,
                            show_progress=False)
    alone, _ = run(tmp_path, [JobSpec("a", 0.0, "toy", 1, 32)], name="alone", settings=two_nodes)
    pair, events = run(tmp_path, [JobSpec("a", 0.0, "toy", 1, 32), JobSpec("b", 0.0, "toy", 1, 32)],
                       name="pair", settings=two_nodes)
    nodes = {e["job"]: e.get("allocation") for e in events if e["kind"] == "allocate"}
    assert nodes["a"] != nodes["b"]  # one job per node
    assert pair["avg_jct"] == pytest.approx(alone["avg_jct"], rel=1e-9)


def test_without_costs_the_fixed_restart_delay_applies(tmp_path):
    s, _ = run(tmp_path, [JobSpec("j", 0.0, "toy", 1, 32)], costs=None)
    step, _ = toy_step(1, 1, 32)
    assert s["avg_jct"] == pytest.approx(60 + 30 + 1000 * step / float(gain(1.0, 4.0, 1.0)))


def test_replaying_a_simulated_run_reproduces_it(tmp_path):
    jobs = [JobSpec(f"j{i}", 20.0 * i, "toy", 1 + i % 2, 32 * (1 + i % 3)) for i in range(5)]
    orig, _ = run(tmp_path, jobs, policy="pollux", name="orig")
    replay = ReplayPolicy.from_log(tmp_path / "orig" / "events.jsonl")
    wl = Workload("t", tmp_path / "w.csv", tuple(jobs))
    world = World.build({"toy": make_toy()}, SETTINGS.cluster, costs=COSTS)
    again = simulate_policy(world, wl, "pollux", SETTINGS, tmp_path / "again", replay=replay)
    a = {e["job"]: e["t"] for e in read_events(tmp_path / "orig" / "events.jsonl")
         if e["kind"] == "complete"}
    b = {e["job"]: e["t"] for e in read_events(tmp_path / "again" / "events.jsonl")
         if e["kind"] == "complete"}
    assert b == pytest.approx(a)
    assert again["avg_jct"] == pytest.approx(orig["avg_jct"])


def test_measured_steps_refine_the_profile_where_they_were_taken():
    prof = {"toy": make_toy()}
    costs = LiveCosts({"toy": TypeCosts({1: 1.0}, {1: 1.0}, {1: 0.0}, 1.0,
                                        steps=[StepPoint(1, 24, 0.5, 0.01, 10)])})
    refined = refine_profiles(prof, costs)["toy"]
    assert refined.throughput((1,), 24) == (0.5, 0.01)
    assert refined.throughput((1,), 16) == prof["toy"].throughput((1,), 16)
    assert prof["toy"].throughput((1,), 24) != (0.5, 0.01)  # the original is untouched


def test_a_bad_costs_file_names_the_file_and_field(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"format": "coadapt-live-costs", "version": 1,
                                "types": {"toy": {"start": {"1": 1}}}}))
    with pytest.raises(CostError, match=r"c.json: field 'types.toy.restart': missing"):
        LiveCosts.load(path)
    path.write_text("{not json")
    with pytest.raises(CostError, match=r"c.json:1: not JSON"):
        LiveCosts.load(path)


def test_scaling_per_type_and_dropping_colocation():
    scaled = COSTS.scaled({"toy": 2.0}, colocation=False)
    t = scaled.types["toy"]
    assert t.start == {1: 4.0, 2: 6.0} and t.verify == 3.0 and t.colocation == {}
    assert scaled.speed == {"toy": 2.0}
    prof = refine_profiles({"toy": make_toy()}, scaled)["toy"]
    assert prof.throughput((1,), 32)[0] == pytest.approx(2 * toy_step(1, 1, 32)[0])
    assert COSTS.scaled(1.0).types["toy"].colocation == {"toy": 1.5}
