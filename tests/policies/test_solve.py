import itertools

import numpy as np

from coadapt.policies.solve import min_sum_allocation


def brute(costs, capacity):
    best, _arg = np.inf, None
    for combo in itertools.product(*[range(len(c)) for c in costs]):
        if sum(combo) <= capacity:
            v = sum(c[r] for c, r in zip(costs, combo, strict=False))
            if v < best:
                best, _arg = v, combo
    return best


def test_dp_matches_brute_force_on_random_problems():
    rng = np.random.default_rng(1)
    for _ in range(40):
        jobs = rng.integers(1, 5)
        cap = int(rng.integers(0, 9))
        costs = []
        for _ in range(jobs):
            c = rng.uniform(0, 10, size=rng.integers(1, 6))
            c[rng.random(len(c)) < 0.2] = np.inf
            c[0] = rng.uniform(5, 20)
            costs.append(c)
        out = min_sum_allocation(costs, cap)
        assert sum(out) <= cap
        got = sum(c[r] for c, r in zip(costs, out, strict=False))
        assert np.isclose(got, brute(costs, cap))


def test_power_mean_prefers_the_job_that_scales():
    # 1/speedup costs; job 0 scales linearly, job 1 saturates at 1 slot.
    s0 = np.array([0, 1, 2, 3, 4], float)
    s1 = np.array([0, 1, 1, 1, 1], float)
    out = min_sum_allocation([1 / (s0 + 1e-3), 1 / (s1 + 1e-3)], 4)
    assert out == [3, 1]


def _random_costs(rng, n: int, k: int) -> list:
    out = []
    for _ in range(n):
        speed = np.concatenate([[0.0], np.cumsum(rng.uniform(0.1, 1.0, k - 1))])
        out.append(1.0 / (speed + 0.05))  # p = -1: cost 1/speedup, finite at 0 slots
    return out


def test_partitioned_allocation_is_exact_below_its_threshold_and_close_above():
    from coadapt.policies.solve import min_sum_allocation, partitioned_allocation

    rng = np.random.default_rng(3)
    costs = _random_costs(rng, 60, 9)
    assert partitioned_allocation(costs, 64) == min_sum_allocation(costs, 64)
    costs = _random_costs(rng, 300, 9)
    exact = min_sum_allocation(costs, 400)
    pop = partitioned_allocation(costs, 400, exact_cells=20_000)  # 300 x 401 cells: 7 groups
    assert sum(pop) <= 400 and pop != exact
    value = lambda alloc: sum(c[r] for c, r in zip(costs, alloc, strict=True))  # noqa: E731
    assert value(exact) <= value(pop) <= value(exact) * 1.02  # near-optimal


def test_every_job_takes_its_best_when_all_fit_and_pop_groups_match_separate_solves():
    from coadapt.policies.solve import _solve_groups, cost_matrix, partitioned_allocation

    rng = np.random.default_rng(7)
    costs = _random_costs(rng, 10, 5)  # 10 jobs of at most 4 slots on 40 slots
    assert partitioned_allocation(costs, 40) == [4] * 10
    # lockstep groups (padded with jobs that take nothing) = each group solved alone
    a, b = _random_costs(rng, 7, 6), _random_costs(rng, 4, 9)
    stacked = np.full((2, 7, 9), np.inf)
    stacked[:, :, 0] = 0.0
    stacked[0, :, :6] = cost_matrix(a)
    stacked[1, :4] = cost_matrix(b)
    both = _solve_groups(stacked, np.array([11, 9]))
    assert both[0].tolist() == min_sum_allocation(a, 11)
    assert both[1, :4].tolist() == min_sum_allocation(b, 9) and not both[1, 4:].any()
