import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from coadapt.models.batching import JobLimits
from coadapt.policies import JobView, PolicyConfig, Snapshot, make_policy
from coadapt.policies.dynamic import Dynamic
from coadapt.policies.fixed import Fixed
from coadapt.policies.optimus import OptimusOracle
from coadapt.policies.placement import Pack, Placer, SpreadMostFree, _BestFit, pack, spread_most_free
from coadapt.policies.pollux import Pollux
from coadapt.policies.tiresias import Tiresias
from coadapt.world.cluster import nodes_of


def test_spread_most_free_takes_emptiest_node_first():
    free = np.array([2, 4, 3])
    assert spread_most_free(5, free) == (0, 4, 1)
    assert list(free) == [2, 0, 2]
    assert spread_most_free(10, free) is None


def test_pack_keeps_unchanged_jobs_and_respects_capacity():
    current = {"a": (0, 2, 0, 0)}
    out = pack({"a": 2, "b": 4, "c": 3, "d": 1}, (4, 4, 4, 4), current)
    assert out["a"] == (0, 2, 0, 0)
    used = np.sum([np.array(v) for v in out.values()], axis=0)
    assert np.all(used <= 4)
    for name in "bcd":  # all fit on one node each
        assert np.count_nonzero(out[name]) == 1 and sum(out[name]) == {"b": 4, "c": 3, "d": 1}[name]


def test_pack_allows_one_multi_node_job_per_node():
    out = pack({"big1": 6, "big2": 6, "small": 2}, (4, 4, 4, 4), {})
    multi_nodes = [set(np.flatnonzero(out[n])) for n in ("big1", "big2")
                   if np.count_nonzero(out[n]) > 1]
    for a in multi_nodes:
        for b in multi_nodes:
            if a is not b:
                assert not (a & b)
    used = np.sum([np.array(v) for v in out.values()], axis=0)
    assert np.all(used <= 4)


def test_pack_gives_a_fragment_rather_than_nothing():
    # Two 3-slot multi-node jobs occupy parts of all nodes; a 4-slot job still gets slots.
    current = {"m1": (3, 1, 0), "m2": (0, 0, 3)}
    out = pack({"m1": 4, "m2": 3, "x": 4}, (4, 4, 4), current)
    assert sum(out["x"]) >= 1 and np.count_nonzero(out["x"]) == 1


def test_spread_placer_keeps_unchanged_jobs_then_spreads_in_order():
    nodes = nodes_of((4, 4, 4))
    out = SpreadMostFree().place({"keep": 3, "a": 5, "b": 4, "c": 9}, nodes,
                                 {"keep": (0, 3, 0), "a": (1, 0, 0)})
    assert out["keep"] == (0, 3, 0)
    assert out["a"] == (4, 0, 1)  # emptiest node first: 4 on node 0, then node 2
    assert out["b"] == (0, 1, 3)
    assert "c" not in out  # does not fit: left out, not squeezed
    assert list(out) == ["keep", "a", "b"]


def test_pack_placer_is_pack_on_the_nodes_slots():
    counts, current = {"a": 2, "b": 4, "c": 3, "d": 1}, {"a": (0, 2, 0, 0)}
    assert Pack().place(counts, nodes_of((4, 4, 4, 4)), current) == \
        pack(counts, (4, 4, 4, 4), current)


LIMITS = JobLimits(init_batch_size=32, max_batch_size=1024, min_local_bsz=8, max_local_bsz=64,
                   max_replicas=16)


def _view(name: str, req: int) -> JobView:
    return JobView(name=name, application="toy", submit_time=0.0, age=100.0,
                   attained_service=0.0, restarts=0, allocation=(0, 0, 0), batch_size=64,
                   requested_replicas=req, requested_batch=64, limits=LIMITS,
                   max_observed_replicas=0, progress=0.0, model=None)


@pytest.mark.parametrize("cls, default", [(Fixed, Pack), (Dynamic, Pack), (Pollux, Pack),
                                          (Tiresias, SpreadMostFree),
                                          (OptimusOracle, SpreadMostFree)])
def test_each_policy_names_its_default_placer(cls, default):
    assert isinstance(cls(PolicyConfig()).placer, default)


class _LastNode:
    """A placer that puts every job on the last node, for the swap test."""

    def place(self, counts, nodes, current):
        return {k: (0,) * (len(nodes) - 1) + (c,) for k, c in counts.items()}


def test_a_policy_places_with_the_placer_it_is_given():
    placer: Placer = _LastNode()
    snap = Snapshot(600.0, nodes_of((4, 4, 4)), (_view("a", 2),), 30.0, 60.0)
    assert make_policy("fixed", PolicyConfig()).decide(snap)["a"].allocation == (2, 0, 0)
    assert Fixed(PolicyConfig(), placer=placer).decide(snap)["a"].allocation == (0, 0, 2)
    assert Tiresias(PolicyConfig(), placer=placer).decide(snap)["a"].allocation == (0, 0, 2)


@given(st.lists(st.integers(0, 4), min_size=1, max_size=12),
       st.lists(st.integers(1, 5), max_size=20))
def test_the_best_fit_is_the_fullest_node_with_room_lowest_index_on_ties(free, wants):
    arr = np.array(free)
    fit = _BestFit(arr)
    ref = np.array(free)
    for want in wants:
        got = fit.take(want)
        fits = np.flatnonzero(ref >= want)
        if not len(fits):
            assert got is None
            continue
        i = fits[np.argmin(ref[fits])]
        ref[i] -= want
        assert got == tuple(int(want if k == i else 0) for k in range(len(free)))
        assert (arr == ref).all()
