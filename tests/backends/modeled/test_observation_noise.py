"""--observation-noise: modeled jobs' reports carry the profile's measured
spread; the simulated truth and the fairness yardstick do not."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from coadapt.backends.modeled.job import ReportNoise
from coadapt.cli import main
from coadapt.eventlog import read_events
from coadapt.models.batching import step_with_accum
from coadapt.runs.options import add_options, settings, world_of
from coadapt.runs.settings import RunSettings
from coadapt.runs.simulate import simulate_policy
from coadapt.world.cluster import ClusterSpec
from coadapt.world.costs import LiveCosts
from coadapt.world.profiles.cpu_format import load_cpu_profiles, measured_spread
from coadapt.world.profiles.profile import Spread
from coadapt.world.workload import load_workload

PROFILES = Path(__file__).resolve().parents[3] / "profiles"
CPU_TYPES = ("mlp-mnist1d", "cnn-mnist1d", "lstm-text", "transformer-text")
REPORTED = ("step_time", "sync_time", "grad_var")
WALL = ("decision_ms", "wall_s")  # wall-clock fields: differ between any two runs


@pytest.fixture(scope="module")
def cpu():
    return load_cpu_profiles(PROFILES)


@pytest.fixture
def workload(tmp_path, cpu):
    path = tmp_path / "w.csv"
    path.write_text("name,time,application,num_replicas,batch_size\n"
                    "a,0,mlp-mnist1d,1,64\nb,5,cnn-mnist1d,2,64\n"
                    "c,20,mlp-mnist1d,2,128\nd,40,cnn-mnist1d,1,32\n")
    return load_workload(str(path), set(cpu))


def simulate(tmp_path, cpu, wl, policy="fixed", noise=0.0, seed=0, name="run", fairness=False):
    """Run like ``coadapt simulate`` does; the log's events (wall-clock fields dropped)."""
    p = argparse.ArgumentParser()
    add_options(p)
    args = p.parse_args(["--cluster", "8x2", "--observation-noise", str(noise),
                         "--seed", str(seed)])
    world = world_of(args, cpu, LiveCosts.load(PROFILES / "live-costs.json"))
    s = settings(args, world, wl, show_progress=False)
    if not fairness:
        s = dataclasses.replace(s, fairness=False)
    simulate_policy(world, wl, policy, s, tmp_path / name)
    return [{k: v for k, v in e.items() if k not in WALL}
            for e in read_events(tmp_path / name / "events.jsonl")]


def reports(events):
    return [e["step_time"] for e in events if e["kind"] in ("start", "epoch", "progress")]


def jcts(events):
    return {e["job"]: e["t"] for e in events if e["kind"] == "complete"}


# ------------------------------------------------------------ measured spread
@pytest.mark.parametrize("app", CPU_TYPES)
def test_shipped_profiles_measure_a_plausible_spread(cpu, app):
    s = cpu[app].spread
    assert 0.005 < s.step_cv < 0.5
    assert 0.005 < s.sync_cv < 1.0
    assert 0.001 < s.noise_cv < 0.5


def test_spread_is_the_median_run_to_run_cv():
    # Two configurations, two runs each; a contended third run is left out
    # because its configuration has clean runs.
    rows = [(1, 4, 0, 1.0, 0.1, False), (1, 4, 0, 1.0, 0.1, False),  # run medians 1, 3
            (1, 4, 1, 3.0, 0.3, False), (1, 4, 2, 90.0, 9.0, True),
            (2, 4, 0, 2.0, 0.5, False), (2, 4, 1, 2.0, 0.5, False)]   # run medians 2, 2
    timings = pl.DataFrame(rows, schema=["workers", "local_bsz", "run", "step_time", "sync_time",
                                         "contended"], orient="row")
    # phi ~ grad_var / grad_sqr over seeds at each (batch, k-th row): CVs 0 and sqrt(2)/3
    curves = pl.DataFrame({"batch_size": [32] * 4 + [64] * 4, "seed": [0, 0, 1, 1] * 2,
                           "progress": [100.0, 200.0, 101.0, 202.0] * 2,
                           "grad_sqr": [1.0] * 8,
                           "grad_var": [2.0, 4.0, 2.0, 4.0, 1.0, 1.0, 2.0, 1.0]})
    s = measured_spread(timings, curves)
    cv13 = np.std([1.0, 3.0], ddof=1) / 2.0
    assert s.step_cv == pytest.approx(np.median([cv13, 0.0]), rel=1e-5)
    assert s.sync_cv == pytest.approx(np.median([cv13, 0.0]), rel=1e-5)
    cv12 = np.std([1.0, 2.0], ddof=1) / 1.5
    assert s.noise_cv == pytest.approx(np.median([0.0, 0.0, cv12, 0.0]), abs=1e-12)
    assert measured_spread(None, None) == Spread()


# ----------------------------------------------------------------- the draws
def test_draws_are_per_seed_and_per_job():
    spread = Spread(0.1, 0.2, 0.05)

    def draws(seed, name):
        noise = ReportNoise.for_job(2.0, spread, seed, name)
        return [noise.apply(1.0, 0.5, 3.0) for _ in range(20)]

    assert draws(0, "a") == draws(0, "a")
    assert draws(0, "a") != draws(0, "b")
    assert draws(0, "a") != draws(1, "a")
    steps, syncs, vars_ = np.array(draws(0, "a")).T
    assert (syncs <= steps).all() and np.ptp(vars_) > 0
    assert ReportNoise.for_job(0.0, spread, 0, "a") is None
    assert ReportNoise.for_job(3.0, Spread(), 0, "a") is None


# ------------------------------------------------------------- a simulation
def test_noise_changes_the_reports_not_the_truth(tmp_path, cpu, workload):
    exact = simulate(tmp_path, cpu, workload, noise=0.0, name="n0")
    noisy = simulate(tmp_path, cpu, workload, noise=3.0, name="n3")
    # fixed ignores what jobs report: the same decisions, the same true progress
    assert len(jcts(exact)) == 4
    assert jcts(noisy) == jcts(exact)
    assert [e.get("throughput") for e in noisy] == [e.get("throughput") for e in exact]
    a, b = np.array(reports(exact)), np.array(reports(noisy))
    assert a.shape == b.shape and not np.allclose(a, b)
    assert np.abs(np.log(b / a)).max() > 0.05


def test_zero_noise_reports_the_truth_and_noise_does_not(tmp_path, cpu, workload):
    def mismatch(events):
        # a report's step time against the true throughput the same event logs
        out, accum = [], {}
        for e in events:
            accum[e["job"]] = e.get("accum", accum.get(e["job"]))  # start events lack it
            if e["kind"] in ("start", "epoch", "progress"):
                step = step_with_accum(e["step_time"], e["sync_time"], accum[e["job"]])
                out.append(abs(e["batch"] / step / e["throughput"] - 1))
        return max(out)

    assert mismatch(simulate(tmp_path, cpu, workload, noise=0.0, name="n0")) < 1e-9
    assert mismatch(simulate(tmp_path, cpu, workload, noise=1.0, name="n1")) > 1e-3


def test_a_seed_reproduces_a_noisy_run_and_another_seed_differs(tmp_path, cpu, workload):
    first = simulate(tmp_path, cpu, workload, noise=3.0, seed=7, name="a")
    again = simulate(tmp_path, cpu, workload, noise=3.0, seed=7, name="b")
    other = simulate(tmp_path, cpu, workload, noise=3.0, seed=8, name="c")
    assert first == again
    assert reports(first) != reports(other)
    assert first[0]["observation_noise"] == 3.0 and first[0]["seed"] == 7


def test_the_fairness_yardstick_ignores_the_reports(tmp_path, cpu, workload):
    def t_iso(events):
        return {e["job"]: (e["share"], e["t_iso"]) for e in events if e["kind"] == "fairness"}

    exact = simulate(tmp_path, cpu, workload, "pollux", 0.0, name="n0", fairness=True)
    noisy = simulate(tmp_path, cpu, workload, "pollux", 3.0, name="n3", fairness=True)
    # the noisy run schedules differently, yet every job's yardstick is the same
    assert reports(exact) != reports(noisy)
    assert t_iso(exact) and t_iso(noisy) == t_iso(exact)


# ------------------------------------------------------------------ the option
@pytest.mark.parametrize("bad", ["-1", "nan"])
def test_a_negative_noise_is_an_error_naming_the_option(bad, cpu, workload, tmp_path, capsys):
    p = argparse.ArgumentParser()
    add_options(p)
    args = p.parse_args(["--observation-noise", bad])
    with pytest.raises(ValueError, match="--observation-noise"):
        settings(args, world_of(args, cpu, None), workload)
    with pytest.raises(ValueError, match="--observation-noise"):
        RunSettings(ClusterSpec.parse("1x2"), observation_noise=float(bad))
    rc = main(["simulate", "--workload", str(workload.path), "--policy", "fixed",
               "--observation-noise", bad, "--no-progress", "--out", str(tmp_path / "o")])
    assert rc == 2 and "--observation-noise" in capsys.readouterr().err


def test_live_refuses_noise(tmp_path, capsys):
    out = tmp_path / "live"
    assert main(["live", "--observation-noise", "1", "--out", str(out)]) == 2
    assert "--observation-noise" in capsys.readouterr().err
    assert not out.exists()


def test_settings_without_the_option_mean_no_noise(cpu, workload):
    # option sets written before it existed (a resumed live run, the experiment's list)
    ns = argparse.Namespace(cluster="8x2", bandwidth=10.0, latency=50.0, interval=15.0,
                            restart_delay=3.0, new_jobs="node", tiresias_threshold="60",
                            power=-1.0, seed=0)
    assert settings(ns, world_of(ns, cpu, None), workload).observation_noise == 0.0
