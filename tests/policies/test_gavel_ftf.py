import dataclasses

import numpy as np
import pytest
from kindviews import MODEL, snap, view

from coadapt.policies import PolicyConfig, make_policy, policy_names
from coadapt.policies.base import Oracle
from coadapt.policies.gavel import Gavel
from coadapt.policies.gavel_ftf import GavelFTF, isolated_throughput
from coadapt.world.cluster import nodes_of

CFG = PolicyConfig()
ONE_NODE = nodes_of((4,), "a")


def with_left(job, steps: float, age: float = 0.0):
    return dataclasses.replace(job, age=age, oracle=Oracle(lambda b: steps, lambda p, m, s: 1.0))


def test_it_is_an_oracle_variant_not_one_of_all():
    assert "gavel-ftf-oracle" in policy_names(primary=False, variants=True)
    assert "gavel-ftf-oracle" not in policy_names()
    assert make_policy("gavel-ftf-oracle", CFG).uses_oracle


def test_isolated_share_is_one_mth_of_each_kind_at_most_all_the_time():
    s = snap([view("x"), view("y")])  # two kinds of 8 slots each
    sizes = np.array([[4, 4], [8, 8]])
    tput = np.array([[10.0, 5.0], [10.0, 5.0]])
    iso = isolated_throughput(s, sizes, tput)
    # x: a 4-gang gets 8/(2*4) = 1 of each kind, scaled to one in all: 1/2 each
    # y: an 8-gang gets 8/(2*8) = 1/2 of each kind: already one in all
    assert iso == pytest.approx([7.5, 7.5])


def test_finish_time_fairness_shares_what_max_throughput_gives_to_the_faster_job():
    # Gangs of 4 on one 4-slot node: one at a time. a is twice as fast, b has 10x the work.
    jobs = [with_left(view("a", req=4), 100.0), with_left(view("b", req=4), 1000.0)]
    s = snap(jobs, nodes=ONE_NODE)
    sizes = np.array([[4], [4]])
    tput = np.array([[20.0], [10.0]])
    assert Gavel(CFG).fractions(s, sizes, tput)[:, 0] == pytest.approx([1.0, 0.0])
    # rho_a = 0.5 / x_a and rho_b = 0.5 / x_b (see the module docstring): 1/2 each, rho 1
    x = GavelFTF(CFG).fractions(s, sizes, tput)
    assert x[:, 0] == pytest.approx([0.5, 0.5], abs=2e-3)


def test_every_job_on_its_isolated_share_is_rho_one_whatever_its_age():
    # Equal work and speed: half the time each reaches rho = 1 for both, so ages change nothing.
    jobs = [with_left(view("old", req=4), 500.0, age=400.0), with_left(view("new", req=4), 500.0)]
    x = GavelFTF(CFG).fractions(snap(jobs, nodes=ONE_NODE), np.array([[4], [4]]),
                                np.array([[10.0], [10.0]]))
    assert x[:, 0] == pytest.approx([0.5, 0.5], abs=2e-3)


def test_decide_runs_the_rounds_on_the_fair_fractions():
    jobs = [with_left(view("a", req=4, kind="a", models={"a": MODEL}, seen=4), 100.0),
            with_left(view("b", req=4, kind="a", models={"a": MODEL}, seen=4), 1000.0)]
    d = make_policy("gavel-ftf-oracle", CFG).decide(snap(jobs, nodes=ONE_NODE))
    assert len(d) == 1 and all(not a.adaptive for a in d.values())
