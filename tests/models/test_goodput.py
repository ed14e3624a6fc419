import numpy as np
import pytest

from coadapt.models.batching import JobLimits, split_batch
from coadapt.models.goodput import (
    GoodputModel,
    GradParams,
    PerfParams,
    efficiency,
    fit_perf_params,
    gain,
    predicts_well,
    step_time,
)

LIM = JobLimits(init_batch_size=32, max_batch_size=1024, min_local_bsz=8, max_local_bsz=64,
                max_replicas=64)
P = PerfParams(alpha_c=0.02, beta_c=0.001, alpha_n=0.05, beta_n=0.002, alpha_r=0.01,
               beta_r=0.001, gamma=1.0)


def test_gain_and_efficiency_by_hand():
    # sqr=1, var=4, S=4: r = (4+1)/(4/4+1) = 2.5; E = r/S = 0.625
    assert float(gain(1.0, 4.0, 4.0)) == pytest.approx(2.5)
    assert float(efficiency(1.0, 4.0, 4.0)) == pytest.approx(0.625)
    # phi = M0*var/sqr = 128*4 = 512; E(M) = (phi+M0)/(phi+M) at M=512 -> 640/1024
    assert float(efficiency(1.0, 4.0, 512 / 128)) == pytest.approx(640 / 1024)
    assert float(gain(1.0, 4.0, 1.0)) == pytest.approx(1.0)
    assert float(gain(0.0, 0.0, 3.0)) == 1.0  # degenerate statistics: no gain, no crash


def test_step_time_by_hand():
    p = P.as_array()
    one = np.array([1.0])
    # single replica: T = T_acc + ~0 network; T_acc = 0.02 + 0.001*30 = 0.05
    assert step_time(p, one, one, np.array([30.0]), np.zeros(1))[0] == pytest.approx(0.05)
    # 4 replicas on 2 nodes, gamma=1: 0.05 + (0.05 + 0.002*2) = 0.104; 2 accum steps add 0.1
    t = step_time(p, np.array([2.0]), np.array([4.0]), np.array([30.0]), np.array([2.0]))
    assert t[0] == pytest.approx(0.104 + 0.1)


def test_fit_recovers_model_from_its_own_predictions():
    nodes = np.array([1, 1, 1, 2, 2, 1, 1, 4])
    reps = np.array([1, 2, 4, 4, 8, 1, 4, 16])
    m = np.array([16, 16, 32, 32, 64, 64, 64, 32])
    truth = PerfParams(0.02, 0.001, 0.05, 0.002, 0.01, 0.001, 1.5)
    st = step_time(truth.as_array(), nodes, reps, m, np.zeros(len(m)))
    acc = truth.alpha_c + truth.beta_c * m
    fit = fit_perf_params(nodes, reps, m, st, st - acc)
    pred = step_time(fit.as_array(), nodes, reps, m, np.zeros(len(m)))
    assert np.max(np.abs(pred / st - 1)) < 0.03
    assert predicts_well(fit, 2, 8, 64, float(st[4]), float(st[4] - acc[4]))
    assert not predicts_well(fit, 2, 8, 64, float(st[4]) * 1.5, float(st[4] - acc[4]))


def test_fit_priors_pin_unobserved_parameters():
    # Only single-replica data at one batch size: network terms pinned, alpha_c = mean/2.
    fit = fit_perf_params([1, 1], [1, 1], [32, 32], [0.1, 0.1], [0.0, 0.0])
    assert fit.alpha_c == pytest.approx(0.05)
    assert fit.alpha_r <= 1e-7 and fit.beta_n <= 1e-7
    assert fit.alpha_n >= 1.1 * fit.alpha_r


def test_optimize_prefers_large_batch_only_when_noise_allows():
    noisy = GoodputModel(P, GradParams(sqr=1.0, var=100.0), init_batch_size=32)
    quiet = GoodputModel(P, GradParams(sqr=1.0, var=0.01), init_batch_size=32)
    a = noisy.optimize([1], [4], LIM)
    b = quiet.optimize([1], [4], LIM)
    assert a.batch_size[0] * 4 > 4 * b.batch_size[0]
    # A brute-force check of the chosen goodput against every valid candidate.
    best = 0.0
    for batch in np.geomspace(32, 1024, 400):
        micro, acc = split_batch(batch, 4, LIM)
        best = max(best, float(noisy.goodput(1, 4, micro, acc)))
    assert a.goodput[0] == pytest.approx(best, rel=0.03)


def test_split_batch_matches_reference_rules():
    m, s = split_batch(np.array([2048, 256, 256]), np.array([8, 1, 4]),
                       JobLimits(128, 4096, 8, 128, 64))
    assert list(m) == [128, 128, 64] and list(s) == [1, 1, 0]


def _random_jobs(seed: int, n: int):
    from coadapt.models.goodput import GoodputModel, GradParams, PerfParams

    rng = np.random.default_rng(seed)
    models, limits = [], []
    for _ in range(n):
        m0 = int(rng.integers(16, 128))
        models.append(GoodputModel(PerfParams(*rng.uniform(0.001, 0.2, 6), rng.uniform(1, 3)),
                                   GradParams(rng.uniform(0.1, 1), rng.uniform(0.1, 100)), m0))
        limits.append(JobLimits(m0, int(m0 * rng.integers(4, 64)), int(rng.integers(1, 8)),
                                int(rng.integers(32, 256)), int(rng.integers(1, 64))))
    return models, limits


def test_stacked_optimize_is_each_jobs_optimize_bit_for_bit():
    from coadapt.models.goodput import stacked_optimize

    models, limits = _random_jobs(0, 30)
    r = np.arange(1, 17)
    owner = np.repeat(np.arange(30), len(r))
    nodes = np.ceil(np.tile(r, 30) / 4)
    many = stacked_optimize(models, limits, owner, nodes, np.tile(r, 30))
    for j, (m, lim) in enumerate(zip(models, limits, strict=True)):
        one = m.optimize(np.ceil(r / 4), r, lim)
        part = slice(j * len(r), (j + 1) * len(r))
        assert np.array_equal(one.goodput, many.goodput[part])
        assert np.array_equal(one.batch_size, many.batch_size[part])
        # the memoized path (one allocation, asked twice) gives the same optimum
        for k in (0, 7):
            again = [m.optimize(np.array([np.ceil(r[k] / 4)]), np.array([r[k]]), lim)
                     for _ in range(2)]
            assert all(a.goodput[0] == one.goodput[k] and a.micro[0] == one.micro[k]
                       for a in again)
