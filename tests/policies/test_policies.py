import numpy as np
import pytest

from coadapt.models.batching import JobLimits
from coadapt.models.goodput import GoodputModel, GradParams, PerfParams
from coadapt.policies import REGISTRY, JobView, PolicyConfig, Snapshot, make_policy
from coadapt.policies.base import Oracle
from coadapt.world.cluster import nodes_of

CFG = PolicyConfig()
LIMITS = JobLimits(init_batch_size=32, max_batch_size=1024, min_local_bsz=8, max_local_bsz=64,
                   max_replicas=16)
FAST = PerfParams(0.02, 0.001, 0.002, 1e-8, 0.001, 1e-8, 1.0)   # scales almost linearly
SLOW = PerfParams(0.02, 0.001, 5.0, 1e-8, 5.0, 1e-8, 1.0)       # network dominates


def view(name, *, submit=0.0, alloc=(0, 0), req=1, batch=64, model=None, seen=0,
         attained=0.0, oracle=None, age=1000.0, weight=1.0):
    return JobView(name=name, application="toy", submit_time=submit, age=age,
                   attained_service=attained, restarts=0, allocation=alloc,
                   batch_size=batch, requested_replicas=req, requested_batch=batch,
                   limits=LIMITS, max_observed_replicas=seen,
                   progress=0.0, model=model, oracle=oracle, weight=weight)


def snap(jobs, slots=(4, 4), t=600.0):
    return Snapshot(t, nodes_of(slots), tuple(jobs), 30.0, 60.0)


def test_registry_has_all_policies_and_rejects_unknown():
    assert {"fixed", "dynamic", "pollux", "tiresias", "optimus-oracle"} <= set(REGISTRY)
    with pytest.raises(KeyError, match="unknown policy"):
        make_policy("nope", CFG)
    assert sorted(n for n, c in REGISTRY.items() if c.uses_oracle) == ["gavel-ftf-oracle",
                                                                      "optimus-oracle"]


def test_fixed_is_fifo_and_non_preemptive():
    p = make_policy("fixed", CFG)
    d = p.decide(snap([view("a", req=6), view("b", req=4), view("c", req=1)]))
    # a takes 6; b (4) does not fit and blocks c behind it.
    assert sum(d["a"].allocation) == 6 and "b" not in d and "c" not in d
    running = view("a", req=6, alloc=d["a"].allocation)
    d2 = p.decide(snap([running, view("b", req=4)]))
    assert d2["a"].allocation == running.allocation and "b" not in d2


def test_fixed_tries_no_placement_for_a_head_that_exceeds_the_free_slots():
    # A full cluster with a long queue (the Philly trace's state for weeks): one
    # placement of the running jobs a round, not one more per round for the head.
    from coadapt.policies.placement import Pack

    class Counting(Pack):
        def place(self, counts, nodes, current):
            calls.append(len(counts))
            return super().place(counts, nodes, current)

    calls: list[int] = []
    p = make_policy("fixed", CFG)
    p.placer = Counting()
    d = p.decide(snap([view("a", req=6, alloc=(4, 2)), view("b", req=4), view("c", req=1)]))
    assert d["a"].allocation == (4, 2) and "b" not in d and "c" not in d
    assert calls == [1]


def test_fixed_queues_heavier_jobs_first_but_never_preempts():
    p = make_policy("fixed", CFG)
    d = p.decide(snap([view("a", req=6), view("b", req=4), view("vip", submit=9.0, req=4,
                                                                   weight=4.0)]))
    # vip (weight 4, submitted last) jumps the queue and takes 4; a (6) no longer fits
    # and, strict FIFO among the rest, blocks b.
    assert slots(d, "vip") == 4 and "a" not in d and "b" not in d
    d = p.decide(snap([view("a", req=6, alloc=(4, 2)), view("vip", submit=9.0, req=4,
                                                            weight=4.0)]))
    assert d["a"].allocation == (4, 2) and "vip" not in d  # waits; a keeps its slots


def test_tiresias_orders_each_queue_by_weight():
    p = make_policy("tiresias", PolicyConfig(tiresias_threshold=1e9))
    d = p.decide(snap([view("a", req=8), view("vip", submit=5.0, req=8, weight=2.0)], t=0.0))
    assert slots(d, "vip") == 8 and "a" not in d


def slots(d, name):
    return sum(d[name].allocation) if name in d else 0


def test_tiresias_demotes_after_threshold_and_prefers_new_jobs():
    p = make_policy("tiresias", PolicyConfig(tiresias_threshold=100.0))
    d = p.decide(snap([view("old", req=8)], t=0.0))
    assert sum(d["old"].allocation) == 8
    old = view("old", req=8, alloc=d["old"].allocation)
    d = p.decide(snap([old, view("new", submit=50.0, req=8)], t=60.0))
    # old ran 60 s x 8 slots = 480 >= 100: demoted; new runs first, old preempted.
    assert "old" not in d and sum(d["new"].allocation) == 8


def test_dynamic_uses_all_slots_and_favours_scalable_job():
    m_fast = GoodputModel(FAST, GradParams(1.0, 1.0), 32)
    m_slow = GoodputModel(SLOW, GradParams(1.0, 1.0), 32)
    jobs = [view("fast", batch=512, model=m_fast, seen=8),
            view("slow", batch=512, model=m_slow, seen=8)]
    d = make_policy("dynamic", CFG).decide(snap(jobs))
    assert sum(d["fast"].allocation) > sum(d["slow"].allocation) >= 1


def test_pollux_gives_slots_to_goodput_and_adapts_batch():
    m_fast = GoodputModel(FAST, GradParams(1.0, 50.0), 32)  # noisy: large batches pay
    m_slow = GoodputModel(SLOW, GradParams(1.0, 50.0), 32)
    jobs = [view("fast", model=m_fast, seen=8), view("slow", model=m_slow, seen=8)]
    d = make_policy("pollux", CFG).decide(snap(jobs))
    assert sum(d["fast"].allocation) > sum(d["slow"].allocation) >= 1
    assert d["fast"].adaptive and d["fast"].batch_size > 32
    used = np.sum([np.array(a.allocation) for a in d.values()], axis=0)
    assert np.all(used <= 4)


def test_pollux_exploration_cap_limits_new_jobs():
    d = make_policy("pollux", CFG).decide(snap([view("new", model=None, seen=0)]))
    assert sum(d["new"].allocation) == 1


def test_optimus_oracle_uses_remaining_work():
    def oracle(remaining):
        return Oracle(remaining_iterations=lambda b: remaining,
                      step_time=lambda pl, m, s: 0.01 + 0.001 * m * (s + 1) + 0.002 * len(pl))
    jobs = [view("long", batch=512, oracle=oracle(1e6)), view("short", batch=512, oracle=oracle(10))]
    d = make_policy("optimus-oracle", CFG).decide(snap(jobs))
    assert sum(d["long"].allocation) > sum(d["short"].allocation) >= 1


@pytest.mark.parametrize(("start_node", "expect"), [(True, 4), (False, 1)])
def test_a_new_job_starts_on_up_to_one_node(start_node, expect):
    cfg = PolicyConfig(start_node=start_node)
    for name in ("pollux", "dynamic"):
        d = make_policy(name, cfg).decide(snap([view("new", req=1, batch=256)], slots=(4, 4)))
        assert sum(d["new"].allocation) == expect


def test_fixed_head_that_cannot_be_placed_blocks_later_jobs():
    # x spans both nodes (2+2): the one-multi-node-job-per-node rule leaves no
    # way to place h's 3 slots although 4 are free by count. Strict FIFO: c (1
    # slot, which would place) must not start ahead of h.
    p = make_policy("fixed", CFG)
    jobs = [view("x", req=4, alloc=(2, 2)), view("h", submit=1.0, req=3),
            view("c", submit=2.0, req=1)]
    d = p.decide(snap(jobs))
    assert d["x"].allocation == (2, 2) and "h" not in d and "c" not in d


def test_tiresias_caps_request_at_cluster_size():
    p = make_policy("tiresias", CFG)
    d = p.decide(snap([view("big", req=16)], t=0.0))
    assert sum(d["big"].allocation) == 8
    big = view("big", req=16, alloc=d["big"].allocation)
    d = p.decide(snap([big], t=60.0))
    assert d["big"].allocation == big.allocation


@pytest.mark.parametrize("p", [float("nan"), float("inf"), -float("inf")])
def test_a_power_that_is_not_a_finite_number_is_refused(p):
    with pytest.raises(ValueError, match="finite number"):
        PolicyConfig(p=p)


@pytest.mark.parametrize("p", [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0])
def test_pollux_serves_every_job_at_any_power_when_slots_suffice(p):
    """p = 0 (the geometric mean) used to leave every job waiting (NaN**0);
    any p must still hand out the slots when there is one per job."""
    m = GoodputModel(FAST, GradParams(1.0, 50.0), 32)
    jobs = [view(n, model=m, seen=8) for n in "abcd"]
    d = make_policy("pollux", PolicyConfig(p=p)).decide(snap(jobs))
    assert set(d) == set("abcd") and sum(sum(a.allocation) for a in d.values()) == 8


@pytest.mark.parametrize("p", [-1.0, 0.0, 1.0])
def test_pollux_leaves_out_the_most_served_job_when_slots_are_short(p):
    """Three identical jobs, one slot each would do, two slots in all: the job
    with the most attained service is the one left waiting, whatever the sign
    of p (the tie-break pointed the wrong way for p > 0)."""
    m = GoodputModel(SLOW, GradParams(1.0, 1.0), 32)  # no gain beyond one slot
    jobs = [view("least", model=m, seen=1, attained=10.0),
            view("most", model=m, seen=1, attained=900.0),
            view("mid", model=m, seen=1, attained=300.0)]
    d = make_policy("pollux", PolicyConfig(p=p)).decide(snap(jobs, slots=(2,)))
    assert "most" not in d and {"least", "mid"} <= set(d)


def test_pollux_fair_gives_the_job_that_fell_behind_more_slots():
    """Two identical jobs, same age: one has made far less progress than its
    fair share would have. Pollux splits evenly; pollux-fair favours the one
    behind (its rho_hat is larger)."""
    import dataclasses

    m = GoodputModel(FAST, GradParams(1.0, 50.0), 32)
    ahead = dataclasses.replace(view("ahead", model=m, seen=8), progress=50000.0)
    behind = dataclasses.replace(view("behind", model=m, seen=8), progress=500.0)
    even = make_policy("pollux", CFG).decide(snap([ahead, behind]))
    fair = make_policy("pollux-fair", CFG).decide(snap([ahead, behind]))
    assert sum(even["ahead"].allocation) == sum(even["behind"].allocation)
    assert sum(fair["behind"].allocation) > sum(fair["ahead"].allocation) >= 1


def test_power_variants_override_the_configured_p():
    from coadapt.policies.pollux import Pollux

    assert make_policy("pollux-p-0.5", CFG).p == -0.5
    assert make_policy("pollux-p+1", PolicyConfig(p=-2.0)).p == 1.0
    assert isinstance(make_policy("pollux-fair", CFG), Pollux)
