"""Property: any value of any engine option either resolves to settings that
are finite and in range, or is refused by name (argparse's exit 2 naming the
option, or a ValueError naming it), quickly; never another exception."""

from __future__ import annotations

import argparse
import math
import time

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from toyprofile import make_toy

from coadapt.runs.options import parse_options, world_of
from coadapt.runs.options import settings as run_settings
from coadapt.world.workload import JobSpec, Workload

WL = Workload("w", None, (JobSpec("j0", 0.0, "toy", 1, 64), JobSpec("j1", 100.0, "toy", 2, 64)))
OPTIONS = ["--interval", "--restart-delay", "--tiresias-threshold", "--p", "--latency",
           "--bandwidth", "--horizon", "--cluster", "--seed", "--observation-noise",
           "--bootstrap-error", "--new-jobs", "--efficiency-truth", "--kind-speeds", "--preset"]
EXAMPLES = 300

values = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "-1", "0", "1e-9", "1e15", "1e308", "1e400", "", " ",
                     "auto", "none", "8x2", "0x2", "99999999x99999999", "2x0", "4,4,2", "x",
                     "1x1:nokind", "osdi21", "node", "one", "curves", "3.5", "-0.5", "1_000"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-10**20, max_value=10**20).map(str),
    st.text(max_size=12),
)


def refused_by_name(option: str, message: str) -> bool:
    return option in message or option.lstrip("-") in message


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(option=st.sampled_from(OPTIONS), value=values)
@example(option="--interval", value="nan")
@example(option="--observation-noise", value="nan")
@example(option="--bootstrap-error", value="inf")
@example(option="--cluster", value="99999999x99999999")
@example(option="--tiresias-threshold", value="-5")
def test_any_option_value_resolves_or_is_refused_by_name(option: str, value: str) -> None:
    t0 = time.perf_counter()
    try:
        args = parse_options([option, value])
    except SystemExit as exc:  # argparse: its message names the option on stderr
        assert exc.code == 2
        return
    try:
        s = run_settings(args, world_of(args, {"toy": make_toy()}, None), WL, show_progress=False)
    except ValueError as exc:
        assert refused_by_name(option, str(exc)) or "cluster" in str(exc), (option, value, exc)
        return
    finally:
        assert time.perf_counter() - t0 < 5.0, (option, value)
    for name in ("interval", "restart_delay", "tiresias_threshold", "horizon"):
        got = getattr(s, name)
        assert got is None or (math.isfinite(got) and got >= 0), (option, value, name, got)
    assert s.interval >= 1e-3
    assert 0 < s.cluster.total_slots <= 1_000_000, (option, value)


def test_the_fuzzed_options_are_the_parsers() -> None:
    from coadapt.runs.flags import add_options

    parser = argparse.ArgumentParser(add_help=False)
    add_options(parser)
    known = {o for a in parser._actions for o in a.option_strings}
    assert set(OPTIONS) <= known, set(OPTIONS) - known
