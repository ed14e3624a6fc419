import numpy as np

from coadapt.policies.placement import pack, spread_most_free


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
