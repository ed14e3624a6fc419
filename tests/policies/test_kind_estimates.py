import dataclasses

import numpy as np
import pytest
from kindviews import LIMITS, MODEL, view

from coadapt.models.goodput import GoodputModel, GradParams, PerfParams
from coadapt.policies.kind_estimates import (
    best_batch_on,
    goodput_on,
    goodput_on_kinds,
    on_kind,
    throughput_on,
)

SPEEDS = {"a": 300.0, "b": 100.0}
R = np.array([1, 2, 4, 8])
N = np.array([1, 1, 1, 2])


def test_a_kind_it_ran_on_uses_its_own_model_unscaled():
    job = view("j", kind="b", models={"b": MODEL}, seen=2)
    est = on_kind(job, "b", SPEEDS)
    assert est.model is MODEL and est.ratio == 1.0 and not est.projected
    ours = goodput_on(job, est, N, R)
    direct = MODEL.optimize(N, R, LIMITS)
    np.testing.assert_allclose(ours.goodput, direct.goodput)
    np.testing.assert_array_equal(ours.batch_size, direct.batch_size)


def test_an_unseen_kind_scales_the_seen_model_by_the_bootstrap_ratio():
    job = view("j", kind="b", models={"b": MODEL}, seen=2)
    est = on_kind(job, "a", SPEEDS)
    assert est.model is MODEL and est.ratio == pytest.approx(3.0) and est.projected
    on_a, on_b = goodput_on(job, est, N, R), goodput_on(job, on_kind(job, "b", SPEEDS), N, R)
    np.testing.assert_allclose(on_a.goodput, 3.0 * on_b.goodput)
    np.testing.assert_array_equal(on_a.batch_size, on_b.batch_size)  # efficiency is kind-free
    np.testing.assert_allclose(throughput_on(job, est, N, R, 64),
                               3.0 * throughput_on(job, on_kind(job, "b", SPEEDS), N, R, 64))


def test_the_current_kind_is_the_one_projected_from():
    slow = GoodputModel(PerfParams(0.2, 0.01, 0.002, 1e-8, 0.001, 1e-8, 1.0),
                        GradParams(1.0, 1.0), 32)
    speeds = {"a": 300.0, "b": 100.0, "c": 50.0}
    job = view("j", kind="b", models={"a": slow, "b": MODEL}, seen=2)
    est = on_kind(job, "c", speeds)
    assert est.model is MODEL and est.ratio == pytest.approx(0.5)


def test_a_job_with_no_model_gets_the_bootstrap_times_replicas_at_m0():
    job = view("new")
    est = on_kind(job, "a", SPEEDS)
    assert est.model is None
    good = goodput_on(job, est, N, R)
    np.testing.assert_allclose(good.goodput, 300.0 * R)
    assert best_batch_on(job, est, 1, 1) == LIMITS.init_batch_size
    # the minimal micro-batch per worker binds beyond M0 / min_local_bsz workers
    assert best_batch_on(job, est, 2, 8) == LIMITS.min_local_bsz * 8
    np.testing.assert_allclose(throughput_on(job, on_kind(job, "b", SPEEDS), N, R, 64), 100.0 * R)


def test_without_a_bootstrap_every_kind_counts_as_equal():
    job = view("j", kind="a", models={"a": MODEL}, seen=2)
    est = on_kind(job, "b", {})
    assert est.model is MODEL and est.ratio == 1.0
    np.testing.assert_allclose(goodput_on(job, on_kind(view("new"), "b", {}), N, R).goodput, R)


def test_a_model_of_unknown_kind_is_valid_on_every_kind():
    job = dataclasses.replace(view("j", seen=2), model=MODEL)  # a kind-unaware engine
    for kind in ("a", "b"):
        est = on_kind(job, kind, SPEEDS)
        assert est.model is MODEL and est.ratio == 1.0


def test_several_kinds_at_once_equal_one_at_a_time():
    speeds = {"a": 300.0, "b": 100.0, "c": 50.0}
    for job in (view("j", kind="b", models={"b": MODEL}, seen=2), view("new")):
        ests = [on_kind(job, k, speeds) for k in ("a", "b", "c")]
        shapes = [(N[:2], R[:2]), (N, R), (N[:1], R[:1])]
        together = goodput_on_kinds(job, ests, [n for n, _ in shapes], [r for _, r in shapes])
        for est, (n, r), got in zip(ests, shapes, together, strict=True):
            np.testing.assert_allclose(got, goodput_on(job, est, n, r).goodput)
