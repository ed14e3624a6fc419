import numpy as np
from kindviews import MODEL, kinds_used, snap, view

from coadapt.policies import PolicyConfig, make_policy
from coadapt.policies.gavel import Gavel
from coadapt.world.cluster import nodes_of

CFG = PolicyConfig()
FAST_ON_A = {"a": 300.0, "b": 100.0}


def mixed_jobs():
    return ([view(f"r{i}", req=r, kind="b", models={"b": MODEL}, seen=r)
             for i, r in enumerate((1, 2, 4, 8, 3))]
            + [view(f"n{i}", req=r) for i, r in enumerate((1, 2, 16))])


def test_lp_fractions_are_feasible():
    s = snap(mixed_jobs(), speeds=FAST_ON_A)
    plan = Gavel(CFG).plan(s)
    x = plan.fractions
    assert x.shape == (8, 2) and np.all(x >= 0) and np.all(x <= 1)
    assert np.all(x.sum(axis=1) <= 1 + 1e-6)
    for k, kind in enumerate(plan.kinds):
        assert (plan.sizes[:, k] * x[:, k]).sum() <= s.slots_of_kind(kind) + 1e-6
    assert plan.sizes[-1].tolist() == [8, 8]  # 16 requested, capped at each kind's slots
    assert np.all(plan.throughput[:, 0] > plan.throughput[:, 1])  # everything is faster on a


def test_realized_rounds_honour_one_kind_requested_sizes_and_capacity():
    p = make_policy("gavel", CFG)
    jobs = mixed_jobs()
    for _ in range(4):
        d = p.decide(snap(jobs, speeds=FAST_ON_A))
        used = {"a": 0, "b": 0}
        for job in jobs:
            if job.name not in d:
                continue
            a = d[job.name]
            assert len(kinds_used(a.allocation)) == 1
            assert sum(a.allocation) == min(job.requested_replicas, 8)
            assert not a.adaptive and a.batch_size == job.requested_batch
            used[kinds_used(a.allocation).pop()] += sum(a.allocation)
        assert used["a"] <= 8 and used["b"] <= 8
        jobs = [view(j.name, req=j.requested_replicas, kind=j.kind, models=j.models,
                     seen=j.max_observed_replicas,
                     alloc=d[j.name].allocation if j.name in d else (0,) * 4) for j in jobs]


def test_a_lone_job_runs_on_the_kind_where_it_is_faster():
    d = make_policy("gavel", CFG).decide(snap([view("j", req=2, kind="b", models={"b": MODEL},
                                                    seen=2)], speeds=FAST_ON_A))
    assert kinds_used(d["j"].allocation) == {"a"} and sum(d["j"].allocation) == 2


class HalfEach(Gavel):
    """Gavel with time fractions fixed at one half each, to watch the rounds."""

    def fractions(self, snap, sizes, tput):
        return np.full(tput.shape, 0.5 / tput.shape[1])


def test_rounds_share_time_in_proportion_to_the_fractions():
    nodes = nodes_of((4,))
    p = HalfEach(CFG)
    jobs = [view("x", req=4, alloc=(0,)), view("y", req=4, alloc=(0,))]
    ran = []
    for _ in range(6):
        d = p.decide(snap(jobs, nodes=nodes))
        assert len(d) == 1
        (name,) = d
        ran.append(name)
        jobs = [view(j.name, req=4, alloc=d[j.name].allocation if j.name in d else (0,))
                for j in jobs]
    assert ran.count("x") == ran.count("y") == 3
    assert all(a != b for a, b in zip(ran, ran[1:], strict=False))  # they alternate


def test_state_of_departed_jobs_is_dropped_and_one_kind_works():
    p = Gavel(CFG)
    nodes = nodes_of((4, 4))
    d = p.decide(snap([view("a", req=4, alloc=(0, 0)), view("b", req=6, alloc=(0, 0))],
                      nodes=nodes))
    assert len(d) == 1  # 4 + 6 > 8 slots: one gang runs, whole
    assert {n: sum(a.allocation) for n, a in d.items()} in ({"a": 4}, {"b": 6})
    p.decide(snap([view("b", req=6, alloc=(0, 0))], nodes=nodes))
    assert set(p._received) == {"b"}
