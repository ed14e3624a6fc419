import numpy as np
import pytest
from kindviews import MODEL, NODES, kinds_used, snap, view

from coadapt.policies import PolicyConfig, make_policy
from coadapt.policies.kind_estimates import best_batch_on, on_kind
from coadapt.policies.kind_placement import Config, WholeNodes
from coadapt.policies.sia import Sia, kind_configs
from coadapt.world.cluster import nodes_of

CFG = PolicyConfig()
FAST_ON_A = {"a": 300.0, "b": 100.0}


def slots_per_kind(decision, nodes=NODES):
    used: dict[str, int] = {}
    for a in decision.values():
        for n, s in zip(nodes, a.allocation, strict=True):
            used[n.kind] = used.get(n.kind, 0) + s
    return used


def test_configurations_are_powers_of_two_within_a_node_then_whole_nodes():
    got = kind_configs(nodes_of((8, 8, 8), "rtx"))
    assert [(c.nodes, c.slots) for c in got] == [(1, 1), (1, 2), (1, 4), (1, 8), (2, 16), (3, 24)]
    assert [c.slots for c in kind_configs(nodes_of((6,), "odd"))] == [1, 2, 4, 6]


def test_a_job_three_times_faster_on_a_kind_moves_there():
    job = view("j", kind="b", models={"b": MODEL}, seen=2, alloc=(0, 0, 2, 0))
    d = make_policy("sia", CFG).decide(snap([job], speeds=FAST_ON_A))
    assert kinds_used(d["j"].allocation) == {"a"}
    assert sum(d["j"].allocation) <= 4  # at most twice what it ran at
    est = on_kind(job, "a", FAST_ON_A)
    assert d["j"].adaptive and d["j"].batch_size == best_batch_on(job, est, 1, 4)


def test_a_new_job_starts_on_one_slot_of_the_faster_kind():
    d = make_policy("sia", CFG).decide(snap([view("new")], speeds=FAST_ON_A))
    assert kinds_used(d["new"].allocation) == {"a"} and sum(d["new"].allocation) == 1


def test_growth_is_at_most_doubling_per_round():
    job = view("j", kind="a", models={"a": MODEL}, seen=2, alloc=(2, 0, 0, 0))
    d = make_policy("sia", CFG).decide(snap([job], speeds=FAST_ON_A))
    assert d["j"].allocation == (4, 0, 0, 0)


def test_capacity_of_each_kind_is_respected_and_jobs_use_one_kind():
    jobs = [view(f"n{i}") for i in range(12)]
    d = make_policy("sia", CFG).decide(snap(jobs, speeds=FAST_ON_A))
    assert len(d) == 12  # lambda_n: every job that fits gets a configuration
    assert slots_per_kind(d) == {"a": 8, "b": 4}
    assert all(len(kinds_used(a.allocation)) == 1 for a in d.values())
    grown = [view(f"g{i}", kind="a", models={"a": MODEL}, seen=4, alloc=(0,) * 4)
             for i in range(6)]
    d = make_policy("sia", CFG).decide(snap(grown, speeds=FAST_ON_A))
    used = slots_per_kind(d)
    assert used.get("a", 0) <= 8 and used.get("b", 0) <= 8 and len(d) == 6


def test_a_costly_restart_keeps_the_current_configuration():
    fragile = view("j", kind="b", models={"b": MODEL}, seen=2, alloc=(0, 0, 2, 0),
                   age=100.0, restarts=3)  # factor (100 - 90) / 130
    d = make_policy("sia", CFG).decide(snap([fragile], speeds={"a": 100.0, "b": 100.0}))
    assert d["j"].allocation == (0, 0, 2, 0)


def test_one_kind_cluster_without_bootstrap():
    nodes = nodes_of((4, 4))
    jobs = [view("r", kind="default", models={"default": MODEL}, seen=2, alloc=(2, 0)),
            view("new", alloc=(0, 0))]
    d = make_policy("sia", CFG).decide(snap(jobs, nodes=nodes))
    assert set(d) == {"r", "new"}
    assert sum(d["new"].allocation) == 1 and 1 <= sum(d["r"].allocation) <= 4
    assert sum(sum(a.allocation) for a in d.values()) <= 8


def test_unplaceable_configurations_are_left_out():
    nodes = NODES
    current = {"keep": (3, 0, 0, 0), "keep2": (0, 3, 0, 0)}
    configs = {"keep": Config("a", 1, 3), "keep2": Config("a", 1, 3),
               "wide": Config("a", 2, 8), "two": Config("a", 1, 2), "one": Config("a", 1, 1),
               "onb": Config("b", 2, 8)}
    placed = WholeNodes().place(configs, nodes, current)
    assert placed["keep"] == (3, 0, 0, 0) and placed["keep2"] == (0, 3, 0, 0)
    assert "wide" not in placed and "two" not in placed  # no whole node, no node with 2 free
    assert placed["one"] in ((1, 0, 0, 0), (0, 1, 0, 0))
    assert placed["onb"] == (0, 0, 4, 4)


def test_the_ilp_sees_goodput_normalized_per_job_and_powered():
    p = Sia(CFG)
    job = view("j", kind="a", models={"a": MODEL}, seen=4, alloc=(4, 0, 0, 0))
    configs, value = p.candidates(snap([job], speeds=FAST_ON_A), job)
    # the row's smallest entry (1 slot on b) is 1 before the restart factor 1000/1030;
    # the current configuration keeps its value undiscounted
    assert value.min() == pytest.approx(1000 / 1030)
    cur = configs.index(Config("a", 1, 4))
    others = [v for c, v in zip(configs, value, strict=True) if c == Config("a", 1, 2)]
    assert value[cur] > others[0]
    assert max(c.slots for c in configs) == 8
    assert np.all(p.cost(value) <= 3000) and np.all(np.round(p.cost(value), 2) == p.cost(value))
    with pytest.raises(ValueError, match="p < 0"):
        Sia(CFG, p=0.5)


def test_without_bootstrap_for_new_jobs_one_slot_of_every_kind_is_worth_one():
    p = Sia(CFG, bootstrap_new=False)
    s = snap([view("new")], speeds=FAST_ON_A)
    configs, value = p.candidates(s, s.jobs[0])
    assert configs == [Config("a", 1, 1), Config("b", 1, 1)] and value.tolist() == [1.0, 1.0]
    assert sum(p.decide(s)["new"].allocation) == 1


def test_a_job_restoring_its_checkpoint_keeps_its_configuration():
    # On kind b, three times slower: free to move, it goes to a; mid-restore, it stays.
    args = dict(kind="b", models={"b": MODEL}, seen=2, alloc=(0, 0, 2, 0))
    moved = make_policy("sia", CFG).decide(snap([view("j", **args)], speeds=FAST_ON_A))
    assert kinds_used(moved["j"].allocation) == {"a"}
    kept = make_policy("sia", CFG).decide(snap([view("j", restoring=True, **args)],
                                                speeds=FAST_ON_A))
    assert kept["j"].allocation == (0, 0, 2, 0)


def test_a_restoring_job_keeps_its_slots_even_against_jobs_that_value_them_more():
    # Kind a has 8 slots: the restoring job holds 4 of them at value 1; eight new jobs
    # on a would each rather have a slot. The lock is a constraint, not a preference.
    old = view("old", kind="a", models={"a": MODEL}, seen=4, alloc=(4, 0, 0, 0), restoring=True)
    new = [view(f"n{i}") for i in range(12)]
    d = make_policy("sia", CFG).decide(snap([old, *new], speeds=FAST_ON_A))
    assert d["old"].allocation == (4, 0, 0, 0)


def test_a_round_above_exact_jobs_is_partitioned_within_every_kinds_capacity():
    # 4 jobs solved whole at a time: 12 jobs make 3 POP groups, each on a third of
    # every kind's slots; a restoring job keeps its configuration outside them.
    old = view("old", kind="a", models={"a": MODEL}, seen=4, alloc=(4, 0, 0, 0), restoring=True)
    grown = [view(f"g{i}", kind="a", models={"a": MODEL}, seen=2, alloc=(0,) * 4)
             for i in range(12)]
    s = snap([old, *grown], speeds=FAST_ON_A)
    pop = Sia(CFG, exact_jobs=4)
    d = pop.decide(s)
    whole = Sia(CFG).decide(s)
    assert d["old"].allocation == (4, 0, 0, 0)
    used = slots_per_kind(d)
    assert used.get("a", 0) <= 8 and used.get("b", 0) <= 8
    assert all(len(kinds_used(a.allocation)) == 1 for a in d.values())
    rows = [pop.candidates(s, j) for j in s.jobs]
    assert len(d) >= len(whole) - 2 and pop.solve(s, rows) != [None] * len(rows)
