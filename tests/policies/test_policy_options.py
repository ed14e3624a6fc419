"""Policy options (--policy-arg): declared, typed, checked, and delivered
through PolicyConfig; the built-in policies' options leave their defaults alone."""

from __future__ import annotations

from typing import Literal

import pytest
from pluginkit import clean_registry, good_policy  # noqa: F401 (a fixture)

from coadapt.models.batching import JobLimits
from coadapt.models.goodput import GoodputModel, GradParams, PerfParams
from coadapt.policies import JobView, PolicyConfig, Snapshot, make_policy
from coadapt.policies.options import parse_value
from coadapt.policies.plugins import options_of, policy_options, resolve
from coadapt.runs.settings import RunSettings
from coadapt.world.cluster import ClusterSpec, nodes_of

CFG = PolicyConfig()


@pytest.mark.parametrize("text, tp, value", [
    ("3", int, 3), ("-0.5", float, -0.5), ("1e3", float, 1000.0), ("yes", bool, True),
    ("OFF", bool, False), ("0", bool, False), ("abc", str, "abc"), ("lifo", Literal["fifo", "lifo"],
                                                                    "lifo"),
    ("none", float | None, None), ("2", float | None, 2.0), ("2", Literal[1, 2], 2),
])
def test_values_are_typed_from_the_field(text, tp, value):
    got = parse_value(text, tp)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("text, tp, message", [
    ("1.5", int, "expected an integer, got '1.5'"),
    ("nan", float, "expected a finite number, got 'nan'"),
    ("inf", float, "expected a finite number"),
    ("maybe", bool, "expected true or false"),
    ("stack", Literal["fifo", "lifo"], "expected one of fifo, lifo"),
    ("x", float | None, "expected a finite number or none"),
])
def test_a_value_of_the_wrong_type_says_what_was_expected(text, tp, message):
    with pytest.raises(ValueError, match=message):
        parse_value(text, tp)


@pytest.mark.usefixtures("clean_registry")
def test_options_reach_the_policy_through_its_config(tmp_path):
    name = resolve(f"{good_policy(tmp_path)}:Good")
    opts = policy_options([f"{name}.limit=2", "scale=0.5", "mode=lifo", "greedy=true",
                           f"{name}.limit=3", "label=none"], [name, "fixed"])
    assert opts == ((name, (("greedy", True), ("label", None), ("limit", 3), ("mode", "lifo"),
                            ("scale", 0.5))),)
    got = make_policy(name, PolicyConfig(options=opts)).options
    assert (got.limit, got.scale, got.greedy, got.mode, got.label) == (3, 0.5, True, "lifo", None)
    assert make_policy(name, CFG).options.limit == 0  # defaults without options
    assert [(o.name, o.type_text, o.default) for o in options_of(name)][:1] == [
        ("limit", "int", 0)]
    assert options_of(name)[0].help == "most slots per job (0: its request)"


@pytest.mark.parametrize("arg, message", [
    ("pollux.fairnes=1", "--policy-arg pollux.fairnes=1: pollux has no option 'fairnes' "
     "(did you mean 'fairness'?); its options: p, adapt_batch, adapt_workers, fairness"),
    ("fixed.k=1", "fixed has no option 'k'; it declares no options"),
    ("lamda_n=2", "none of the chosen policies (pollux, fixed, sia) has an option 'lamda_n' "
     "(did you mean 'lambda_n'?)"),
    ("gavel.x=1", "'gavel' is not among the chosen policies (pollux, fixed, sia)"),
    ("pollux.p", "expected [POLICY.]KEY=VALUE"),
    ("pollux.=1", "expected [POLICY.]KEY=VALUE"),
    ("pollux.adapt_batch=maybe", "pollux's option adapt_batch (bool): expected true or false, "
     "got 'maybe'"),
    ("sia.p=0.5", "--policy-arg sia: p=0.5: sia: p=0.5, lambda_n=1.1: Sia minimizes"),
])
def test_a_bad_policy_arg_is_refused_with_its_reason(arg, message):
    with pytest.raises(ValueError) as err:
        policy_options([arg], ["pollux", "fixed", "sia"])
    assert message in str(err.value)


def test_a_key_without_policy_sets_every_chosen_policy_that_declares_it():
    opts = policy_options(["p=-0.5"], ["fixed", "pollux", "pollux-p-2", "sia"])
    assert opts == (("pollux", (("p", -0.5),)), ("pollux-p-2", (("p", -0.5),)),
                    ("sia", (("p", -0.5),)))
    assert policy_options(["pollux-p-0.5.p=1"], ["pollux-p-0.5"]) == (
        ("pollux-p-0.5", (("p", 1.0),)),)  # a dotted name: the key is after the last dot
    assert policy_options([], ["pollux"]) == ()


def test_builtin_options_override_switches_and_defaults_only_when_given():
    cfg = PolicyConfig(options=policy_options(
        ["pollux.p=-0.5", "pollux-fair.fairness=2", "gavel-ftf-oracle.max_steps=5",
         "sia.bootstrap_new=false"], ["pollux", "pollux-fair", "gavel-ftf-oracle", "sia"]))
    assert make_policy("pollux", cfg).p == -0.5
    fair = make_policy("pollux-fair", cfg)
    assert (fair.fairness, fair.name) == (2.0, "pollux-fair")
    assert make_policy("pollux-p-2", cfg).p == -2.0  # its switch: no option given for it
    assert make_policy("gavel-ftf-oracle", cfg).max_steps == 5
    assert make_policy("sia", cfg).bootstrap_new is False
    assert [o.default for o in options_of("pollux-fair") if o.name == "fairness"] == [1.0]


def _snap(sync: float = 0.5, count: int = 5) -> Snapshot:
    """Jobs that scale well and worse (``sync``: the slow ones' all-reduce
    seconds), fewer slots than they could use."""
    limits = JobLimits(init_batch_size=32, max_batch_size=1024, min_local_bsz=8,
                       max_local_bsz=64, max_replicas=16)
    fast = GoodputModel(PerfParams(0.02, 0.001, 0.002, 1e-8, 0.001, 1e-8, 1.0),
                        GradParams(1.0, 50.0), 32)
    slow = GoodputModel(PerfParams(0.02, 0.001, sync, 1e-8, sync, 1e-8, 1.0),
                        GradParams(1.0, 5.0), 32)
    jobs = [JobView(name=f"j{i}", application="toy", submit_time=0.0, age=1000.0,
                    attained_service=100.0 * i, restarts=0, allocation=(0, 0), batch_size=64,
                    requested_replicas=2, requested_batch=64, limits=limits,
                    max_observed_replicas=8, progress=0.0, model=fast if i % 2 else slow)
            for i in range(count)]
    return Snapshot(600.0, nodes_of((4, 4)), tuple(jobs), 30.0, 60.0)


def test_pollux_with_option_p_decides_as_its_p_variant():
    # two slow jobs and a fast one on 8 slots: p = -1 and p = -0.5 split them
    # differently (on the 5-job snapshot every p in [-1, 1] agrees)
    snap = _snap(sync=0.05, count=3)
    cfg = PolicyConfig(options=(("pollux", (("p", -0.5),)),))
    chosen = make_policy("pollux", cfg).decide(snap)
    assert chosen == make_policy("pollux-p-0.5", CFG).decide(snap)
    assert chosen != make_policy("pollux", CFG).decide(snap)  # the option matters here
    assert make_policy("pollux", CFG).decide(snap) == make_policy("pollux", PolicyConfig(
        options=(("sia", (("p", -0.9),)),))).decide(snap)  # another policy's options: no effect


@pytest.mark.usefixtures("clean_registry")
def test_run_settings_carry_options_and_plugins_into_config_and_header(tmp_path):
    name = resolve(f"{good_policy(tmp_path)}:Good")
    s = RunSettings(ClusterSpec.parse("2x2")).for_policies(["pollux", name],
                                                           ["pollux.p=-2", "limit=4"])
    cfg = s.policy_config()
    assert cfg.given_options("pollux") == {"p": -2.0} and cfg.plugins == (f"{tmp_path}/good.py:Good",)
    head = s.describe()
    assert head["policy_args"] == {"pollux": {"p": -2.0}, name: {"limit": 4}}
    assert head["plugins"] == [f"{tmp_path}/good.py:Good"]
    assert "policy_args" not in RunSettings(ClusterSpec.parse("2x2")).describe()
    hash(cfg)  # still hashable
