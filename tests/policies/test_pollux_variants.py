"""The Pollux ablations: workers-only (fixed batch) and batch-only (fixed slots)."""

import numpy as np
import pytest

from coadapt.models.batching import JobLimits
from coadapt.models.goodput import GoodputModel, GradParams, PerfParams
from coadapt.policies import REGISTRY, JobView, PolicyConfig, Snapshot, make_policy, policy_names
from coadapt.world.cluster import nodes_of

CFG = PolicyConfig()
LIMITS = JobLimits(init_batch_size=32, max_batch_size=1024, min_local_bsz=8, max_local_bsz=64,
                   max_replicas=16)
FAST = PerfParams(0.02, 0.001, 0.002, 1e-8, 0.001, 1e-8, 1.0)   # scales almost linearly
SLOW = PerfParams(0.02, 0.001, 5.0, 1e-8, 5.0, 1e-8, 1.0)       # network dominates
NOISY = GradParams(1.0, 50.0)   # large batches pay
QUIET = GradParams(1.0, 0.01)   # small batches pay
VARIANTS = ("pollux-batch-only", "pollux-fair", "pollux-p+1", "pollux-p-0.5", "pollux-p-2",
            "pollux-p-8", "pollux-workers-only")


def view(name, *, alloc=(0, 0), req=1, batch=64, model=None, seen=0, limits=LIMITS,
         attained=0.0):
    return JobView(name=name, application="toy", submit_time=0.0, age=1000.0,
                   attained_service=attained, restarts=0, allocation=alloc, batch_size=batch,
                   requested_replicas=req, requested_batch=batch, limits=limits,
                   max_observed_replicas=seen, progress=0.0, model=model)


def snap(jobs, slots=(4, 4)):
    return Snapshot(600.0, nodes_of(slots), tuple(jobs), 30.0, 60.0)


def slots(d, name):
    return sum(d[name].allocation) if name in d else 0


def test_registry_has_variants_outside_all():
    assert set(VARIANTS) <= set(REGISTRY)
    assert policy_names() == sorted(["fixed", "dynamic", "gavel", "pollux", "sia", "tiresias",
                                   "optimus-oracle"])
    assert policy_names(primary=False, variants=True) == sorted([*VARIANTS, "gavel-ftf-oracle"])
    assert "optimus-oracle" not in policy_names(variants=True, oracles=False)
    for name in (*VARIANTS, "pollux"):
        p = make_policy(name, CFG)
        assert p.name == name and not p.uses_oracle and not REGISTRY[name].uses_oracle
    with pytest.raises(ValueError, match="twice"):
        from coadapt.policies.base import register_variant
        from coadapt.policies.pollux import Pollux
        register_variant("pollux-batch-only", Pollux, adapt_workers=False)


def test_workers_only_keeps_requested_batch_and_chooses_slots():
    jobs = [view("fast", req=1, batch=256, model=GoodputModel(FAST, NOISY, 32), seen=8),
            view("slow", req=1, batch=256, model=GoodputModel(SLOW, NOISY, 32), seen=8)]
    d = make_policy("pollux-workers-only", CFG).decide(snap(jobs))
    assert slots(d, "fast") > 1 and slots(d, "fast") > slots(d, "slow") >= 1
    assert all(a.batch_size == 256 and not a.adaptive for a in d.values())
    # Full Pollux would tune the batch of the same jobs (noisy gradients).
    full = make_policy("pollux", CFG).decide(snap(jobs))
    assert full["fast"].batch_size != 256 and full["fast"].adaptive


def test_workers_only_clips_batch_and_keeps_a_minimal_micro_batch():
    model = GoodputModel(FAST, NOISY, 32)
    # Batch 32 with micro-batches of at least 8: at most 4 workers, though 8 are free.
    d = make_policy("pollux-workers-only", CFG).decide(snap([view("a", batch=32, model=model,
                                                                  seen=8)]))
    assert slots(d, "a") == 4 and d["a"].batch_size == 32
    assert slots(make_policy("pollux", CFG).decide(snap([view("a", batch=32, model=model,
                                                               seen=8)])), "a") == 8
    # A request above the job's largest batch runs at that batch.
    d = make_policy("pollux-workers-only", CFG).decide(snap([view("b", batch=5000, model=model,
                                                                  seen=8)]))
    assert d["b"].batch_size == LIMITS.max_batch_size


@pytest.mark.parametrize(("grad", "batch", "bigger"), [(NOISY, 32, True), (QUIET, 512, False)])
def test_batch_only_runs_the_request_and_tunes_the_batch(grad, batch, bigger):
    jobs = [view("a", req=3, batch=batch, model=GoodputModel(FAST, grad, 32), seen=3),
            view("b", req=6, batch=batch, model=GoodputModel(FAST, grad, 32), seen=6),
            view("c", req=2, batch=batch, model=GoodputModel(SLOW, grad, 32), seen=2)]
    d = make_policy("pollux-batch-only", CFG).decide(snap(jobs))
    for job in jobs:
        assert slots(d, job.name) in (0, job.requested_replicas)
    assert d, "someone runs"
    for a in d.values():
        assert a.adaptive and (a.batch_size > batch if bigger else a.batch_size < batch)


def test_batch_only_is_all_or_nothing():
    model = GoodputModel(FAST, NOISY, 32)
    jobs = [view("a", req=6, model=model, seen=6), view("b", req=6, model=model, seen=6)]
    d = make_policy("pollux-batch-only", CFG).decide(snap(jobs))
    assert sorted(slots(d, n) for n in "ab") == [0, 6]
    # Full Pollux splits the cluster between them instead.
    full = make_policy("pollux", CFG).decide(snap(jobs))
    assert slots(full, "a") not in (0, 6) or slots(full, "b") not in (0, 6)


def test_batch_only_starts_at_the_request_and_caps_it():
    d = make_policy("pollux-batch-only", CFG).decide(snap([view("new", req=3)]))
    assert slots(d, "new") == 3  # no start from one slot: workers do not adapt
    narrow = JobLimits(32, 1024, 8, 64, max_replicas=2)
    d = make_policy("pollux-batch-only", CFG).decide(snap([
        view("narrow", req=6, limits=narrow, model=GoodputModel(FAST, NOISY, 32), seen=2),
        view("huge", req=20, model=GoodputModel(FAST, NOISY, 32), seen=1, attained=1e6)]))
    assert slots(d, "narrow") == 2  # above its max useful replicas: capped, not starved
    d = make_policy("pollux-batch-only", CFG).decide(snap([view("huge", req=20, seen=1)]))
    assert slots(d, "huge") == 8  # above the cluster: capped at its size


@pytest.mark.parametrize("name", [*VARIANTS, "pollux"])
def test_capacity_and_variant_invariants_on_random_snapshots(name):
    rng = np.random.default_rng(7)
    policy = make_policy(name, CFG)
    for _ in range(25):
        shape = tuple(int(x) for x in rng.integers(1, 5, size=rng.integers(1, 4)))
        jobs = []
        for i in range(int(rng.integers(1, 7))):
            perf = FAST if rng.random() < 0.5 else SLOW
            grad = GradParams(1.0, float(rng.choice([0.01, 1.0, 50.0])))
            model = GoodputModel(perf, grad, 32) if rng.random() < 0.8 else None
            jobs.append(view(f"j{i}", alloc=(0,) * len(shape), req=int(rng.integers(1, 12)),
                             batch=int(rng.choice([16, 64, 300, 2000])), model=model,
                             seen=int(rng.integers(0, 5))))
        d = policy.decide(snap(jobs, slots=shape))
        used = np.sum([np.array(a.allocation) for a in d.values()], axis=0) if d else 0
        assert np.all(used <= np.array(shape))
        for job in jobs:
            if job.name not in d:
                continue
            a, r = d[job.name], slots(d, job.name)
            if name == "pollux-batch-only":
                cap = min(job.requested_replicas, LIMITS.max_useful_replicas(), sum(shape))
                assert r == cap and a.adaptive
            elif name == "pollux-workers-only":
                want = min(max(job.requested_batch, 8), 1024)
                assert a.batch_size == want and not a.adaptive and want // r >= 8
