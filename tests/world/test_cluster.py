"""The cluster as a list of typed nodes: parsing and printing, old forms unchanged."""

import numpy as np
import pytest

from coadapt.world.cluster import (
    DEFAULT_KIND,
    ClusterSpec,
    Network,
    Node,
    allocation_matrix,
    nodes_of,
    packed_placement,
)


@pytest.mark.parametrize("text", ["8x2", "1x1", "16x4", "4,4,2", "2,3", "5"])
def test_old_forms_parse_and_print_as_before(text):
    c = ClusterSpec.parse(text)
    assert str(c) == ("1x5" if text == "5" else text)
    assert c.kinds == (DEFAULT_KIND,)
    assert [n.index for n in c.nodes] == list(range(c.num_nodes))


def test_properties_derive_from_the_nodes():
    c = ClusterSpec.parse("4,4,2")
    assert c.slots_per_node == (4, 4, 2)
    assert (c.num_nodes, c.total_slots, c.max_slots_per_node) == (3, 10, 4)
    assert c.nodes[2] == Node(2, 2, "default")


def test_kinds_parse_and_print_back():
    c = ClusterSpec.parse("4x2:native,4x2:legacy")
    assert c.kinds == ("native", "legacy") and c.slots_per_node == (2,) * 8
    assert [n.kind for n in c.nodes] == ["native"] * 4 + ["legacy"] * 4
    assert str(c) == "4x2:native,4x2:legacy"
    assert str(ClusterSpec.parse("2x4:fast")) == "2x4:fast"
    mixed = ClusterSpec.parse("2x4:fast,2,2")  # no kind is the default kind
    assert mixed.kinds == ("fast", DEFAULT_KIND)
    assert str(mixed) == "2x4:fast,2x2"
    assert ClusterSpec.parse(str(mixed)) == mixed
    # an explicit default kind prints as before
    assert str(ClusterSpec.parse("8x2:default")) == "8x2"


def test_compatible_constructor_and_network():
    net = Network(1.0, 10.0)
    c = ClusterSpec((4, 4, 2), net)
    assert c == ClusterSpec(nodes_of((4, 4, 2)), net) == ClusterSpec.parse("4,4,2", net)
    assert c.network is net and ClusterSpec.parse("2x2").network == Network()


@pytest.mark.parametrize("text, message", [
    ("0x4", "nodes and slots must be >= 1"),
    ("4x0", "nodes and slots must be >= 1"),
    ("4,0,2", "every node needs at least 1 slot"),
    ("4x", "expected NODESxSLOTS"),
    ("4x2:", "expected NODESxSLOTS"),
    ("4x2:9fast", "expected NODESxSLOTS"),
    ("", "expected NODESxSLOTS"),
])
def test_bad_clusters_fail_with_the_flag_named(text, message):
    with pytest.raises(ValueError, match=message):
        ClusterSpec.parse(text)


def test_nodes_must_be_indexed_in_order():
    with pytest.raises(ValueError, match="indexed 0"):
        ClusterSpec((Node(1, 2), Node(0, 2)))
    with pytest.raises(ValueError, match="at least one node"):
        ClusterSpec(())


def test_packed_placement_fills_whole_nodes_first():
    assert packed_placement(5, 2) == (2, 2, 1)
    assert packed_placement(4, 4) == (4,)
    assert packed_placement(0, 4) == ()


def test_allocation_matrix_converts_rows_and_keeps_what_a_byte_cannot_hold():
    m = allocation_matrix([(0, 2, 0), (1, 0, 3)], 3)
    assert m.dtype == np.uint8 and m.tolist() == [[0, 2, 0], [1, 0, 3]]
    assert allocation_matrix([], 4).shape == (0, 4)
    big = allocation_matrix([(300, 0)], 2)  # more than 255 slots on a node
    assert big.tolist() == [[300, 0]]
    neg = allocation_matrix([(1, -1)], 2)  # a faulty policy's entry, kept for the check
    assert neg.tolist() == [[1, -1]]
