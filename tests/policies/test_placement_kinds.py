"""Placement on a cluster of several kinds: one kind per job, first fit."""

from coadapt.policies.placement import Pack, SpreadMostFree
from coadapt.world.cluster import ClusterSpec


def _kinds_used(nodes, alloc):
    return {n.kind for n, a in zip(nodes, alloc, strict=True) if a}


def test_every_placer_keeps_a_job_on_one_kind():
    nodes = ClusterSpec.parse("2x2:a,2x2:b").nodes
    for placer in (Pack(), SpreadMostFree()):
        out = placer.place({"x": 4, "y": 3, "z": 1}, nodes, {})
        assert all(len(_kinds_used(nodes, a)) == 1 for a in out.values())
        load = [sum(a[i] for a in out.values()) for i in range(4)]
        assert all(x <= 2 for x in load)


def test_a_running_job_stays_on_its_kind_while_it_fits():
    nodes = ClusterSpec.parse("2x2:a,2x2:b").nodes
    out = Pack().place({"x": 2}, nodes, {"x": (0, 0, 1, 0)})
    assert _kinds_used(nodes, out["x"]) == {"b"}


def test_on_one_kind_placement_is_unchanged():
    one = ClusterSpec.parse("4x2").nodes
    counts, cur = {"x": 3, "y": 2, "z": 1}, {"y": (0, 2, 0, 0)}
    from coadapt.policies.placement import pack
    assert Pack().place(counts, one, cur) == pack(counts, (2, 2, 2, 2), cur)
