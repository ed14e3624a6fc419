"""The network calibration: the ring fit, the file, and the Network it makes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from coadapt.world.cluster import Network
from coadapt.world.profiles.network import (
    NetworkCalibrationError,
    fit_ring,
    load_network_calibration,
    network_for,
)
from coadapt.world.truth import ClusterTruth

REPO = Path(__file__).resolve().parents[3]


def synthetic(bw: float, c_us: float, a_us: float, eff: float, noise: float = 0.0, seed: int = 0):
    rng = np.random.default_rng(seed)
    ks, ns = np.meshgrid([2, 3, 4, 6, 8], [2**16, 2**20, 2**22, 2**23])
    ks, ns = ks.ravel(), ns.ravel()
    t = ((c_us + 2 * (ks - 1) * a_us) * 1e-6 + 2 * (ks - 1) / ks * ns * 8 / (eff * bw * 1e9))
    return ks, ns, t * np.exp(noise * rng.standard_normal(t.size))


def test_the_fit_recovers_known_parameters():
    ks, ns, t = synthetic(1.0, 800.0, 120.0, 0.9)
    f = fit_ring(1.0, ks, ns, t)
    assert f.overhead_us == pytest.approx(800, rel=1e-6)
    assert f.latency_us == pytest.approx(120, rel=1e-6)
    assert f.efficiency == pytest.approx(0.9, rel=1e-6)
    assert f.rel_rmse < 1e-9


def test_noisy_fit_reports_its_error_and_stays_near():
    ks, ns, t = synthetic(0.1, 500.0, 300.0, 0.95, noise=0.05, seed=3)
    f = fit_ring(0.1, ks, ns, t)
    assert f.efficiency == pytest.approx(0.95, rel=0.05)
    assert 0.02 < f.rel_rmse < 0.1
    assert f.se_effective_gbps > 0


def test_too_few_points_is_an_error():
    with pytest.raises(ValueError, match="need 3"):
        fit_ring(1.0, np.array([2, 2]), np.array([1e6, 2e6]), np.array([0.01, 0.02]))


def write_cal(tmp_path, fits, **extra):
    path = tmp_path / "network.json"
    path.write_text(json.dumps({"format": 1, "kind": "network-calibration", "date": "d",
                                "machine": {}, "fits": fits, **extra}))
    return path


def fit_dict(bw, eff, lat=100.0, over=700.0):
    return {"bandwidth_gbps": bw, "overhead_us": over, "latency_us": lat,
            "effective_gbps": bw * eff, "points": 20, "rel_rmse": 0.03, "max_rel_err": 0.08,
            "se_overhead_us": 10.0, "se_latency_us": 5.0, "se_effective_gbps": 0.01}


def test_the_calibration_makes_the_measured_network(tmp_path):
    cal = load_network_calibration(write_cal(tmp_path, [fit_dict(0.1, 0.8), fit_dict(1.0, 0.9)]))
    at1 = cal.network(1.0)
    assert at1.measured and "measured" in at1.source
    assert at1.efficiency == pytest.approx(0.9)
    mid = cal.network(0.316)  # halfway in log bandwidth
    assert mid.efficiency == pytest.approx(0.85, abs=1e-3)
    far = cal.network(100.0)  # held beyond the fits, and said so
    assert far.efficiency == pytest.approx(0.9) and "held from 1" in far.source
    wire = at1.allreduce(4e6, 2)
    assert wire == pytest.approx((700 + 200) * 1e-6 + 4e6 * 8 / 0.9e9)
    assert network_for(1.0, 50.0, None) == Network(1.0, 50.0)


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d.update(kind="costs"), "field 'kind'"),
    (lambda d: d.update(format=9), "field 'format'"),
    (lambda d: d["fits"][0].pop("latency_us"), r"fits\[0\] field 'latency_us'"),
    (lambda d: d["fits"][0].update(effective_gbps=0), "must be > 0"),
    (lambda d: d.update(fits=[]), "field 'fits' is empty"),
])
def test_a_bad_file_names_the_field(tmp_path, mutate, message):
    d = {"format": 1, "kind": "network-calibration", "date": "d", "machine": {},
         "fits": [fit_dict(1.0, 0.9)]}
    mutate(d)
    path = tmp_path / "network.json"
    path.write_text(json.dumps(d))
    with pytest.raises(NetworkCalibrationError, match=message) as exc:
        load_network_calibration(path)
    assert str(path) in str(exc.value)


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(NetworkCalibrationError, match="netbench"):
        load_network_calibration(tmp_path / "nope.json")
    (tmp_path / "x.json").write_text("{")
    with pytest.raises(NetworkCalibrationError, match="not readable JSON"):
        load_network_calibration(tmp_path / "x.json")


def test_a_measured_network_replaces_the_loopback_term():
    from coadapt.world.profiles.sources import load_profiles

    app = "mlp-mnist1d"
    profile = load_profiles(str(REPO / "profiles"))[app]
    declared = ClusterTruth.of(app, profile, Network(1.0, 50.0))
    measured = ClusterTruth.of(app, profile, Network(1.0, 50.0, source="netcal measured"))
    m = profile.limits.init_batch_size
    assert declared.kind((1, 1)) == measured.kind((1, 1)) == "network"
    loop = profile.throughput((2,), m)[1]  # 2 -> 2 workers: the ring volume is the same
    _, sync_d = declared.throughput((1, 1), m)
    _, sync_m = measured.throughput((1, 1), m)
    assert sync_d - sync_m == pytest.approx(loop)


def test_links_faster_than_the_hosts_run_at_the_hosts_ceiling(tmp_path):
    from coadapt.world.profiles.network import host_ceiling

    k, n = np.array([2, 2, 2, 3]), np.array([2**20, 2**23, 2**16, 2**23])
    t = np.array([2**20 * 8 / 8e9, 2**23 * 8 / 10e9, 1.0, 1.0])
    assert host_ceiling(k, n, t) == pytest.approx(9.0)  # K=2 and >= 1 MiB only
    cal = load_network_calibration(write_cal(tmp_path, [fit_dict(1.0, 0.95)], host_gbps=9.0))
    assert cal.network(1.0).efficiency == pytest.approx(0.95)
    fast = cal.network(100.0)
    assert fast.efficiency * 100 == pytest.approx(9.0) and "capped" in fast.source
    bad = write_cal(tmp_path, [fit_dict(1.0, 0.95)], host_gbps=-1)
    with pytest.raises(NetworkCalibrationError, match="host_gbps"):
        load_network_calibration(bad)
