"""The named CPU workload sets: reproducible, shaped as declared, requests tuned
at the simulator's truth (not the profile's extrapolation), and the shipped
traces/cpu-*.csv are exactly what seed 1 generates."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest
from toyprofile import make_toy

from coadapt.cli import main
from coadapt.runs.options import tiresias_threshold
from coadapt.workloads.generate import configurations
from coadapt.workloads.sets import SETS, WorkloadSet, get_set, make_workload
from coadapt.world.cluster import ClusterSpec, Network
from coadapt.world.limits import declared_limits
from coadapt.world.profiles.cpu_format import load_cpu_profiles
from coadapt.world.profiles.profile import AppProfile
from coadapt.world.truth import ClusterTruth
from coadapt.world.workload import TRACES_DIR, Workload, load_workload
from coadapt.world.world import World

SHIPPED = Path(__file__).resolve().parents[2] / "profiles"
CLUSTER = ClusterSpec.parse("8x2")  # the shipped traces' cluster, 10 Gbit/s
TUNED = [n for n, s in SETS.items() if not s.user_chosen]


@pytest.fixture(scope="module")
def cpu() -> dict[str, AppProfile]:
    return load_cpu_profiles(SHIPPED)


def requests(wl: Workload) -> list[tuple[str, float, str, int, int]]:
    return [(j.name, j.submit_time, j.application, j.num_replicas, j.batch_size)
            for j in wl.jobs]


def at(bandwidth: float, shape: str = "8x2") -> ClusterSpec:
    return ClusterSpec.parse(shape, Network(bandwidth))


def test_registry_holds_the_declared_sets():
    assert set(SETS) == {"cpu-load1", "cpu-load2", "cpu-load4", "cpu-load8", "cpu-burst",
                         "cpu-user", "cpu-priority"}
    assert [SETS[f"cpu-load{k}"].jobs for k in (1, 2, 4, 8)] == [30, 60, 120, 240]
    assert (SETS["cpu-burst"].jobs, SETS["cpu-burst"].window_s) == (40, 180.0)
    assert SETS["cpu-user"].user_chosen and not any(SETS[n].user_chosen for n in TUNED)
    assert all(s.name == n and s.description for n, s in SETS.items())


def test_priority_set_is_load8_with_a_fifth_of_the_jobs_weighted(cpu):
    base = make_workload("cpu-load8", 3, World.build(cpu, CLUSTER))
    prio = make_workload("cpu-priority", 3, World.build(cpu, CLUSTER))
    unweighted = [dataclasses.replace(j, weight=1.0) for j in prio.jobs]
    assert unweighted == list(base.jobs)  # same arrivals, types and requests
    weights = [j.weight for j in prio.jobs]
    assert weights.count(4.0) == round(0.2 * len(weights)) and set(weights) == {1.0, 4.0}
    other = [j.weight for j in make_workload("cpu-priority", 4, World.build(cpu, CLUSTER)).jobs]
    assert other != weights  # which jobs are weighted is drawn per seed


def test_load_is_derived_from_jobs_and_window():
    assert SETS["cpu-load4"].load == 4.0
    assert [SETS[f"cpu-load{k}"].load for k in (1, 2, 8)] == [1.0, 2.0, 8.0]
    assert SETS["cpu-user"].load == 2.0
    assert SETS["cpu-burst"].load == pytest.approx((40 / 180) / (30 / 1800))
    assert WorkloadSet("x", "", 45, 900.0).load == 3.0


@pytest.mark.parametrize("name", sorted(SETS))
def test_same_seed_same_workload_other_seed_differs(cpu, name):
    a = make_workload(name, 7, World.build(cpu, CLUSTER))
    assert requests(a) == requests(make_workload(name, 7, World.build(cpu, CLUSTER)))
    assert requests(a) != requests(make_workload(name, 8, World.build(cpu, CLUSTER)))
    assert a.name == name and a.path is None


@pytest.mark.parametrize("name", sorted(SETS))
def test_job_counts_windows_and_classes_match_the_set(cpu, name):
    ws = SETS[name]
    for seed in (1, 2):
        wl = make_workload(ws, seed, World.build(cpu, CLUSTER))
        times = [j.submit_time for j in wl.jobs]
        assert len(wl.jobs) == ws.jobs
        assert times == sorted(times) and 0 <= times[0] and times[-1] <= ws.window_s
        assert len({j.name for j in wl.jobs}) == ws.jobs
        assert {j.application for j in wl.jobs} <= {a for t in ws.classes.values() for a in t}


@pytest.mark.parametrize("shape", ["8x2", "2x2", "4,2,1"])
@pytest.mark.parametrize("name", sorted(SETS))
def test_every_request_fits_the_cluster_and_the_job(cpu, name, shape):
    cluster = ClusterSpec.parse(shape)
    limits = declared_limits(cpu)
    wl = make_workload(name, 3, World.build(cpu, cluster))
    for j in wl.jobs:
        lim = limits[j.application]
        assert 1 <= j.num_replicas <= min(cluster.total_slots, lim.max_useful_replicas())
        assert j.num_replicas * lim.min_local_bsz <= j.batch_size <= lim.max_batch_size
        assert j.batch_size in cpu[j.application].validation


def test_estimated_jct_across_nodes_is_the_truth_not_the_extrapolation(cpu):
    app, prof = "lstm-text", cpu["lstm-text"]
    slow, fast = World.build(cpu, at(1.0)), World.build(cpu, at(100.0))
    assert slow.truth(app).kind((2, 2)) == "network"
    extrapolated = ClusterTruth(prof)  # no network: the profile's own extrapolation
    step, _ = extrapolated.throughput((2, 2), 8)  # 4 workers at 32: micro-batch 8
    own = prof.iterations(32, prof.completion_epoch(32)) * step
    one_node = [w.estimated_jct(app, 2, 32) for w in (slow, fast)]
    assert one_node[0] == one_node[1]  # measured: the same everywhere
    four = [w.estimated_jct(app, 4, 32) for w in (slow, fast)]
    assert four[0] > four[1] and four[0] > 1.2 * own
    # So tuning on a slow network keeps the LSTM on one node; a fast one spreads it.
    assert max(r for r, _ in configurations(World.build(cpu, at(1.0, "8x2")), app)) <= 2
    assert max(r for r, _ in configurations(fast, app)) > 2


def test_slower_network_tunes_fewer_multi_node_requests(cpu):
    def multi_node(bandwidth: float) -> int:
        return sum(j.num_replicas > 2 for seed in (1, 2, 3)
                   for j in make_workload("cpu-load4", seed, World.build(cpu, at(bandwidth))).jobs)

    slow, fast = multi_node(1.0), multi_node(100.0)
    assert slow < fast and fast > 0


def test_make_workload_tunes_on_the_given_cluster(cpu):
    # The same seed on a faster network: same arrivals and job types, other requests.
    a, b = (make_workload("cpu-load8", 1, World.build(cpu, at(bw))) for bw in (1.0, 100.0))
    assert [(j.submit_time, j.application) for j in a.jobs] == \
        [(j.submit_time, j.application) for j in b.jobs]
    assert requests(a) != requests(b)


def test_truth_of_a_type_outside_the_registry_is_its_profile():
    toy = make_toy()
    truth = ClusterTruth.of("toy", toy, Network(0.1))
    assert truth.network is None
    for placement in ((2, 2), (4, 4), (1, 1)):
        assert truth.throughput(placement, 16) == toy.throughput(placement, 16)


def test_tiresias_threshold_is_priced_at_the_truth(cpu):
    wl = make_workload("cpu-user", 1, World.build(cpu, CLUSTER))
    slow = tiresias_threshold(World.build(cpu, at(1.0)), wl)
    fast = tiresias_threshold(World.build(cpu, at(100.0)), wl)
    assert slow > fast > 0


def test_user_chosen_requests_are_varied_and_untuned(cpu):
    user = [make_workload("cpu-user", s, World.build(cpu, CLUSTER)) for s in (1, 2)]
    workers = {j.num_replicas for wl in user for j in wl.jobs}
    assert len(workers) >= 5 and max(workers) <= 8
    tuned = {(j.application, j.num_replicas, j.batch_size)
             for n in TUNED for s in (1, 2) for j in make_workload(n, s, World.build(cpu, CLUSTER)).jobs}
    tuned_batches = {(a, b) for a, _, b in tuned}
    chosen = {(j.application, j.batch_size) for wl in user for j in wl.jobs}
    assert chosen - tuned_batches  # batches no tuned set ever picks
    assert {(j.application, j.num_replicas, j.batch_size) for wl in user for j in wl.jobs} - tuned


@pytest.mark.parametrize("name", sorted(SETS))
def test_shipped_trace_is_seed_1(cpu, name):
    # Tuned at the step times the simulator charges: the profiles refined by the live costs.
    from coadapt.world.costs import COSTS_FILE, LiveCosts

    world = World.build(cpu, CLUSTER, costs=LiveCosts.load(SHIPPED / COSTS_FILE))
    shipped = load_workload(str(TRACES_DIR / f"{name}.csv"), set(cpu))
    made = make_workload(name, 1, world)
    assert shipped.jobs == made.jobs, "stale: run make workloads"


def test_unknown_set_name_lists_the_known_ones(cpu):
    with pytest.raises(ValueError, match="cpu-load4") as err:
        make_workload("cpu-load3", 1, World.build(cpu, CLUSTER))
    assert "cpu-load3" in str(err.value) and "cpu-user" in str(err.value)
    with pytest.raises(ValueError, match="unknown workload set"):
        get_set("philly-small")


def test_cli_sets_writes_every_set_and_a_table(tmp_path, capsys):
    code = main(["workload", "sets", "--out", str(tmp_path), "--cluster", "2x2",
                 "--bandwidth", "1", "--seed", "4"])
    assert code == 0
    out = capsys.readouterr().out
    assert sorted(p.stem for p in tmp_path.glob("*.csv")) == sorted(SETS)
    for name, ws in SETS.items():
        wl = load_workload(str(tmp_path / f"{name}.csv"))
        assert len(wl.jobs) == ws.jobs and max(j.num_replicas for j in wl.jobs) <= 4
        line = next(ln for ln in out.splitlines() if ln.startswith(name + " "))
        assert f" {ws.jobs} " in line and f"{ws.load:.1f}" in line


def test_cli_sets_reports_a_bad_cluster(tmp_path, capsys):
    assert main(["workload", "sets", "--out", str(tmp_path), "--cluster", "2y2"]) == 2
    assert "error" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.csv"))


def test_settings_uses_truth_for_auto_threshold(cpu):
    from coadapt.runs.options import settings

    wl = make_workload("cpu-user", 1, World.build(cpu, CLUSTER))
    ns = dict(cluster="8x2", latency=50.0, interval=15.0, restart_delay=3.0, new_jobs="node",
              tiresias_threshold="auto", power=-1.0, seed=0)
    got = [settings(argparse.Namespace(**ns, bandwidth=bw), World.build(cpu, at(bw)), wl)
           .tiresias_threshold for bw in (1.0, 100.0)]
    assert got[0] == tiresias_threshold(World.build(cpu, at(1.0)), wl) > got[1]
