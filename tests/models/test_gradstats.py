"""Gradient-noise estimators and their EMA, against hand-computed values."""

import math

import numpy as np
import pytest

from coadapt.models.gradstats import (
    VAR_FLOOR,
    GradStatsEMA,
    estimate,
    estimate_differenced,
    gain,
    noise_scale,
)


def test_estimate_hand_values() -> None:
    # K=4, L=5, T=2, S=2: sqr = (4*2-5)/3 = 1, var = 2*(5-2)/3 = 2
    assert estimate(5.0, 2.0, 4, 2.0) == pytest.approx((1.0, 2.0))


def test_estimate_needs_two_samples() -> None:
    with pytest.raises(ValueError, match="count >= 2"):
        estimate(1.0, 1.0, 1, 1.0)


def test_differenced_hand_values() -> None:
    # g1 = (2, 0), g2 = (1, 1): |g1|^2 = 4, |g2|^2 = 2, |g1+g2|^2 = 10
    # L = 3, T = 10/4 = 2.5, K = 2, scale 2*1: sqr = 2*2.5 - 3 = 2, var = 2*(3-2.5) = 1
    assert estimate_differenced(4.0, 2.0, 10.0, 1.0) == pytest.approx((2.0, 1.0))


def test_estimate_is_unbiased_on_synthetic_gradients() -> None:
    """Micro-batch gradients g_i = g + noise with Var = tr(Sigma)/m per micro-batch."""
    rng = np.random.default_rng(0)
    d, k, m0, m = 50, 8, 4, 4  # micro-batch m = M0: the scale S = K*m/M0 = K
    g = rng.normal(size=d) * 0.3
    sigma = 2.0  # per-sample std per coordinate: tr(Sigma) = d*sigma^2
    sqrs, vars_ = [], []
    for _ in range(4000):
        micro = g + rng.normal(size=(k, d)) * sigma / math.sqrt(m)
        big_l = float(np.mean(np.sum(micro**2, axis=1)))
        big_t = float(np.sum(micro.mean(axis=0) ** 2))
        s, v = estimate(big_l, big_t, k, k * m / m0)
        sqrs.append(s)
        vars_.append(v)
    assert np.mean(sqrs) == pytest.approx(float(g @ g), rel=0.05)
    assert np.mean(vars_) == pytest.approx(d * sigma**2 / m0, rel=0.05)


def test_gain_hand_value_and_limits() -> None:
    assert gain(1.0, 3.0, 4.0) == pytest.approx(4.0 / 1.75)
    assert gain(1.0, 0.0, 8.0) == pytest.approx(1.0)  # no noise: no gain from batch
    assert gain(0.0, 1.0, 8.0) == pytest.approx(8.0)  # all noise: linear scaling
    assert gain(2.0, 5.0, 1.0) == pytest.approx(1.0)


def test_noise_scale() -> None:
    assert noise_scale(2.0, 5.0, 32) == pytest.approx(80.0)
    assert noise_scale(0.0, 5.0, 32) == math.inf


def test_ema_bias_correction_hand_values() -> None:
    ema = GradStatsEMA()
    assert not ema.ready and math.isnan(ema.sqr) and ema.gain(4.0) == 1.0
    ema.update(1.0, 2.0, 1.0)
    # after one update the bias-corrected average is the value itself
    assert (ema.sqr, ema.var) == pytest.approx((1.0, 2.0))
    ema.update(3.0, 4.0, 2.0)  # theta = 0.999**2 = 0.998001
    # b = 0.998001*0.001 + 0.001999*3, u = 0.998001*0.001 + 0.001999
    assert ema.sqr == pytest.approx(0.006995001 / 0.002997001)
    assert ema.var == pytest.approx(3.334000222222148)
    assert ema.gain(2.0) == pytest.approx(gain(ema.sqr, ema.var, 2.0))


def test_ema_clips_and_floors() -> None:
    ema = GradStatsEMA()
    ema.update(-1.0, -1.0, 1.0)
    assert ema.sqr == 0.0
    assert ema.var == VAR_FLOOR


def test_ema_biased_estimates_are_replaced_by_first_unbiased() -> None:
    ema = GradStatsEMA()
    ema.update(10.0, 10.0, 1.0, biased=True)
    ema.update(10.0, 10.0, 1.0, biased=True)
    assert ema.biased and ema.updates == 2
    ema.update(1.0, 2.0, 4.0)
    assert not ema.biased and ema.updates == 1
    assert (ema.sqr, ema.var) == pytest.approx((1.0, 2.0))


def test_ema_state_roundtrip() -> None:
    ema = GradStatsEMA()
    ema.update(1.5, 2.5, 3.0, biased=True)
    back = GradStatsEMA.from_state_dict(ema.state_dict())
    assert back == ema


def test_gain_agrees_with_goodput_model() -> None:
    """The worker's float gain (hot path, no numpy/scipy import) is the model's formula."""
    from coadapt.models import goodput

    for sqr, var, scale in [(1.0, 3.0, 4.0), (0.01, 0.5, 16.0), (2.0, 1e-6, 1.0), (0.3, 7.0, 0.5)]:
        assert gain(sqr, var, scale) == pytest.approx(float(goodput.gain(sqr, var, scale)))
