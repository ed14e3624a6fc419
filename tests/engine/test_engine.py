import json

import pytest
from toyprofile import make_toy, toy_step

from coadapt.backends.modeled.backend import ModeledBackend
from coadapt.engine.loop import DecisionError, Engine
from coadapt.eventlog import EventLog, read_events
from coadapt.models.goodput import gain
from coadapt.policies import PolicyConfig, make_policy
from coadapt.world.cluster import ClusterSpec
from coadapt.world.workload import JobSpec, Workload
from coadapt.world.world import World


def modeled(prof, delay: float, cluster: str = "2x4"):
    """The declared limits and a modeled backend in the world of ``prof`` on ``cluster``."""
    world = World.build({"toy": prof}, ClusterSpec.parse(cluster))
    return world.limits, ModeledBackend(world, delay)


def run(tmp_path, jobs, policy="fixed", cluster="2x4", profile=None):
    profile = profile or make_toy()
    wl = Workload("t", tmp_path / "w.csv", tuple(jobs))
    path = tmp_path / f"{policy}.jsonl"
    with EventLog(path) as log:
        log.header(mode="simulate", policy=policy, total_slots=ClusterSpec.parse(cluster).total_slots)
        eng = Engine(wl, *modeled(profile, 30.0, cluster), make_policy(policy, PolicyConfig()),
                     ClusterSpec.parse(cluster), log, interval=60.0, restart_delay=30.0)
        result = eng.run()
    return result, list(read_events(path))


def test_single_fixed_job_completes_at_the_analytic_time(tmp_path):
    # 2 replicas on one node at batch 64: micro 32, no accumulation.
    result, events = run(tmp_path, [JobSpec("j", 10.0, "toy", 2, 64)])
    step, _ = toy_step(1, 2, 32)
    rate = float(gain(1.0, 4.0, 64 / 32)) / step  # progress per second
    expected = 60.0 + 30.0 + 1000.0 / rate  # first round, restart delay, 10 epochs x 100
    job = result.jobs[0]
    assert job.record.completed_at == pytest.approx(expected, rel=1e-9)
    kinds = [e["kind"] for e in events]
    assert kinds.count("epoch") == 9 and kinds.count("complete") == 1
    # Event-driven: no ticking, only rounds, epochs and a handful of job events.
    assert len(events) < 10 + int(expected / 60) + 5


def test_jobs_report_observations_not_profile(tmp_path):
    result, events = run(tmp_path, [JobSpec("j", 0.0, "toy", 1, 32)], policy="pollux")
    obs = result.jobs[0].record.obs
    assert obs.model is not None
    # The observed configurations are exactly those the job ran at, as its log shows.
    ran, shape = set(), None
    for e in events:
        if e["kind"] == "allocate":
            shape = (e["nodes"], e["replicas"])
        if e["kind"] in ("epoch", "progress") or (e["kind"] == "allocate" and e["replicas"]):
            ran.add((*shape, e["micro"]))
    assert set(obs.configurations) == ran
    assert obs.max_observed_replicas == max(k[1] for k in ran)


@pytest.mark.parametrize("policy", ["fixed", "dynamic", "pollux", "tiresias", "optimus-oracle"])
def test_every_policy_finishes_a_small_workload(tmp_path, policy):
    jobs = [JobSpec(f"j{i}", 20.0 * i, "toy", 1 + i % 4, 32 * (1 + i % 3)) for i in range(8)]
    result, events = run(tmp_path, jobs, policy=policy)
    assert all(j.record.completed_at is not None for j in result.jobs)
    # Never more slots in use than the cluster has.
    for e in events:
        if e["kind"] == "round":
            assert e["used_slots"] <= 8
    json.dumps(events)  # the log is plain JSON


def test_restart_delay_costs_time(tmp_path):
    slow, _ = run(tmp_path, [JobSpec("j", 0.0, "toy", 1, 32)], policy="fixed")
    prof = make_toy()
    wl = Workload("t", tmp_path / "w.csv", (JobSpec("j", 0.0, "toy", 1, 32),))
    with EventLog(tmp_path / "nodelay.jsonl") as log:
        eng = Engine(wl, *modeled(prof, 0.0),
                     make_policy("fixed", PolicyConfig()), ClusterSpec.parse("2x4"), log,
                     restart_delay=0.0)
        fast = eng.run()
    assert slow.jobs[0].record.completed_at - fast.jobs[0].record.completed_at == pytest.approx(30.0)


class Starve:
    """Never gives any job a slot: the engine must stop, not loop forever."""

    name = "starve"
    uses_oracle = False

    def decide(self, snap):
        return {}


def test_a_policy_that_starves_every_job_fails_loudly(tmp_path):
    prof = make_toy()
    wl = Workload("t", tmp_path / "w.csv", (JobSpec("big", 0.0, "toy", 2, 64),))
    with EventLog(tmp_path / "s.jsonl") as log:
        eng = Engine(wl, *modeled(prof, 1.0),
                     Starve(), ClusterSpec.parse("2x4"), log)
        with pytest.raises(DecisionError, match="gave no job a slot for 200 rounds"):
            eng.run()


class Thrash:
    """Moves every job to the other node each round: with a restart that
    outlasts a round, nobody ever runs (a livelock, not a starvation)."""

    name = "thrash"
    uses_oracle = False

    def decide(self, snap):
        from coadapt.policies.base import Assignment

        return {j.name: Assignment((0, 1) if j.allocation == (1, 0) else (1, 0))
                for j in snap.jobs}


def test_a_livelocked_policy_fails_loudly_instead_of_looping_forever(tmp_path):
    prof = make_toy()
    wl = Workload("t", tmp_path / "w.csv", (JobSpec("j", 0.0, "toy", 1, 32),))
    with EventLog(tmp_path / "l.jsonl") as log:
        eng = Engine(wl, *modeled(prof, 90.0),
                     Thrash(), ClusterSpec.parse("2x4"), log, interval=60.0, restart_delay=90.0)
        with pytest.raises(DecisionError, match=r"no job made progress for 200 rounds .* j \(200 "
                                                r"restarts\)"):
            eng.run()
    # the same policy with restarts shorter than a round is slow, not stuck
    with EventLog(tmp_path / "ok.jsonl") as log:
        eng = Engine(wl, *modeled(prof, 30.0),
                     Thrash(), ClusterSpec.parse("2x4"), log, interval=60.0, restart_delay=30.0)
        assert eng.run().jobs[0].record.completed_at is not None


def test_tiresias_caps_an_oversized_request_at_the_cluster(tmp_path):
    # 9 slots never fit 2x4: tiresias runs it on the whole cluster instead of starving it.
    result, _ = run(tmp_path, [JobSpec("big", 0.0, "toy", 9, 64)], policy="tiresias")
    assert result.jobs[0].record.completed_at is not None


def test_pollux_with_no_restart_delay_has_no_nan(tmp_path):
    prof = make_toy()
    wl = Workload("t", tmp_path / "w.csv", (JobSpec("j", 0.0, "toy", 1, 32),
                                            JobSpec("k", 60.0, "toy", 1, 32)))
    with EventLog(tmp_path / "p0.jsonl") as log:
        eng = Engine(wl, *modeled(prof, 0.0),
                     make_policy("pollux", PolicyConfig(restart_delay=0.0)),
                     ClusterSpec.parse("2x4"), log, restart_delay=0.0)
        result = eng.run()
    assert all(j.record.completed_at is not None for j in result.jobs)


def test_a_job_alone_at_its_best_static_configuration_scores_rho_one(tmp_path):
    """The shared yardstick: a lone job that fixed runs at exactly the best
    static configuration the yardstick found scores rho = 1; pollux, which
    explores from a smaller start, scores more (it pays to find it)."""
    from coadapt.runs.fairness import Yardstick
    from coadapt.runs.settings import RunSettings
    from coadapt.runs.simulate import simulate_policy
    from coadapt.world.world import World

    world = World.build({"toy": make_toy()}, ClusterSpec.parse("2x4"))
    best = Yardstick(world, 60.0, 30.0).best("toy", 8)
    wl = Workload("t", tmp_path / "w.csv", (JobSpec("j", 17.0, "toy", best.replicas, best.batch),))
    rho = {}
    for policy in ("fixed", "pollux"):
        s = simulate_policy(world, wl, policy,
                            RunSettings(ClusterSpec.parse("2x4"), interval=60.0, restart_delay=30.0,
                                        show_progress=False), tmp_path / policy)
        rho[policy] = s["max_rho"]
    assert rho["fixed"] == pytest.approx(1.0, abs=1e-6)
    assert rho["pollux"] > 1.0


class Overfill:
    name = "overfill"
    uses_oracle = False

    def decide(self, snap):
        from coadapt.policies.base import Assignment

        return {j.name: Assignment((3, 0)) for j in snap.jobs}


def test_the_engine_refuses_a_decision_that_overfills_a_node(tmp_path):
    prof = make_toy()
    wl = Workload("t", tmp_path / "w.csv", (JobSpec("a", 0.0, "toy", 1, 32),
                                            JobSpec("b", 0.0, "toy", 1, 32)))
    with EventLog(tmp_path / "o.jsonl") as log:
        eng = Engine(wl, *modeled(prof, 1.0),
                     Overfill(), ClusterSpec.parse("2x4"), log)
        with pytest.raises(DecisionError, match=r"overfills node\(s\) \[0\]: \[6, 0\]"):
            eng.run()


def test_the_engine_refuses_a_negative_or_misshapen_allocation(tmp_path):
    prof = make_toy()
    wl = Workload("t", tmp_path / "w.csv", (JobSpec("a", 0.0, "toy", 1, 32),))
    for alloc, message in (((2, -1), r"gave a the allocation \(2, -1\)"),
                           ((1, 0, 0), r"gave a the allocation \(1, 0, 0\); the cluster has 2")):
        with EventLog(tmp_path / "o.jsonl") as log:
            eng = Engine(wl, *modeled(prof, 1.0), Fixed(alloc), ClusterSpec.parse("2x4"), log)
            with pytest.raises(DecisionError, match=message):
                eng.run()


class Fixed:
    """Every job gets ``alloc``, whatever it is."""

    name = "given"
    uses_oracle = False

    def __init__(self, alloc):
        self.alloc = alloc

    def decide(self, snap):
        from coadapt.policies.base import Assignment

        return {j.name: Assignment(self.alloc) for j in snap.jobs}


class Watch:
    """Fixed, recording what each round showed of job ``j``."""

    name = "watch"
    uses_oracle = False

    def __init__(self):
        self.inner = make_policy("fixed", PolicyConfig())
        self.seen: list[tuple[float, int, bool]] = []

    def decide(self, snap):
        self.seen += [(snap.time, j.replicas, j.restoring) for j in snap.jobs]
        return self.inner.decide(snap)


def test_a_job_reports_restoring_until_its_restart_delay_is_over(tmp_path):
    # Started at the first round (60 s) with a 90-s restart: restoring at 75 s, not at 165 s.
    wl = Workload("t", tmp_path / "w.csv", (JobSpec("j", 0.0, "toy", 1, 32),))
    watch = Watch()
    with EventLog(tmp_path / "r.jsonl") as log:
        Engine(wl, *modeled(make_toy(), 90.0), watch, ClusterSpec.parse("2x4"), log,
               interval=15.0, first_round=60.0, restart_delay=90.0).run()
    shown = {t: (r, restoring) for t, r, restoring in watch.seen}
    assert shown[60.0] == (0, False)  # not allocated yet: nothing to restore
    assert shown[75.0] == (1, True) and shown[135.0] == (1, True)
    assert shown[165.0] == (1, False)
