"""The simulator's truth across nodes: a network model, not the policy's fit."""

import numpy as np
import polars as pl
import pytest
from toyprofile import make_toy, toy_step

from coadapt.models.goodput import fit_perf_params, step_time
from coadapt.world.cluster import ClusterSpec, Network
from coadapt.world.truth import EXTRAPOLATED, MEASURED, NETWORK, ClusterTruth

GRAD = 4e6  # bytes


def one_machine():
    """The toy profile cut to what a 2-core machine measures: 1 and 2 workers, one node."""
    prof = make_toy()
    rows = prof.placements.filter(pl.col("placement").is_in(["1", "2"]))
    return type(prof)(**{**prof.__dict__, "placements": rows, "_cache": {}})


def test_placements_are_labelled_by_where_their_numbers_come_from():
    truth = ClusterTruth(one_machine(), Network(10.0, 50.0), GRAD)
    assert truth.kind((2,)) == MEASURED and truth.kind((0, 1)) == MEASURED
    assert truth.kind((2, 2)) == NETWORK and truth.kind((1, 2, 2)) == NETWORK
    assert truth.kind((4,)) == EXTRAPOLATED  # more workers on one node than were measured
    # A profile measured across nodes (the GPU traces) needs no network model.
    assert ClusterTruth(make_toy(), Network(), GRAD).kind((2, 2)) == MEASURED


def test_across_nodes_the_ring_allreduce_of_the_declared_network_applies():
    prof = one_machine()
    fast = ClusterTruth(prof, Network(100.0, 0.0), GRAD)
    slow = ClusterTruth(prof, Network(1.0, 50.0), GRAD)
    step2, sync2 = toy_step(1, 2, 32)
    compute = step2 - sync2
    k = 4
    wire = 2 * (k - 1) * 50e-6 + 2 * (k - 1) / k * GRAD * 8 / 1e9
    loop = sync2 * (2 * (k - 1) / k) / 1.0
    step, sync = slow.throughput((2, 2), 32)
    assert sync == pytest.approx(loop + wire) and step == pytest.approx(compute + loop + wire)
    assert fast.throughput((2, 2), 32)[0] < step  # the conclusion depends on the network


def test_the_policys_fitted_model_is_not_the_truth():
    """A job that ran on one node only: its fitted model extrapolates across
    nodes with the Pollux priors, and disagrees with the network truth."""
    prof = one_machine()
    truth = ClusterTruth(prof, Network(1.0, 50.0), GRAD)
    obs = [(1, r, m, *prof.throughput((r,), m)) for r in (1, 2) for m in (8, 16, 32, 64)]
    a = np.array(obs, dtype=float)
    perf = fit_perf_params(a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4])
    predicted = step_time(perf.as_array(), np.array([2.0]), np.array([4.0]), np.array([32.0]),
                          np.zeros(1))[0]
    actual = truth.throughput((2, 2), 32)[0]
    assert abs(predicted / actual - 1) > 0.3
    # ... while on what it did observe, the fit is close to the measurement
    assert step_time(perf.as_array(), np.ones(1), np.array([2.0]), np.array([32.0]),
                     np.zeros(1))[0] == pytest.approx(prof.throughput((2,), 32)[0], rel=0.1)


def test_cluster_parse_carries_the_network():
    c = ClusterSpec.parse("8x2", Network(1.0, 10.0))
    assert c.slots_per_node == (2,) * 8 and c.network.bandwidth_gbps == 1.0
    with pytest.raises(ValueError, match="bandwidth must be > 0"):
        Network(0.0, 1.0)
