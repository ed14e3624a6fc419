"""Slots are cores: claims are all-or-nothing and never shared."""

import pytest

from coadapt.backends.live.cores import CorePool, check_cluster
from coadapt.world.cluster import ClusterSpec


def test_claim_release_and_no_sharing():
    pool = CorePool(ClusterSpec.parse("2x2"), cores=[0, 1, 2, 3])
    assert pool.nodes == [[0, 1], [2, 3]]
    assert pool.claim("a", (1, 0)) == (0,)
    assert pool.claim("b", (2, 0)) is None  # node 0 has one free core: all or nothing
    assert pool.held("b") == ()
    assert pool.claim("b", (1, 2)) == (1, 2, 3)
    assert pool.claim("c", (1, 0)) is None
    pool.release("a")
    assert pool.claim("c", (1, 0)) == (0,)
    assert set(pool.owner.values()) == {"b", "c"}


def test_a_cluster_bigger_than_the_machine_is_refused():
    with pytest.raises(ValueError, match="needs 4 cores, this machine has 2"):
        check_cluster(ClusterSpec.parse("2x2"), cores=[0, 1])
