"""The run table: fixed order with the baseline first, the ratio column,
one unit, the legend and the samples line."""

from __future__ import annotations

import re

import pytest

from coadapt.report.order import ordered_policies, policy_order
from coadapt.report.table import format_table, markdown_table, run_table, samples_line


def summary(policy: str, avg: float | None, *, completed: int = 4, jobs: int = 4,
            makespan: float = 600.0, simulated: bool = True) -> dict:
    return {"policy": policy, "jobs": jobs, "completed": completed, "avg_jct": avg,
            "p50_jct": avg, "p99_jct": None if avg is None else 2 * avg, "makespan": makespan,
            "utilization": 0.5, "max_rho": 1.5, "unfair_frac": 0.25, "jain_rho": 0.9,
            "decision_ms_median": 1.25, "wall_s": 2.0, "simulated": simulated}


def cells(text: str) -> dict[str, dict[str, str]]:
    """The grid of a format_table text, by policy and column header."""
    lines = text.splitlines()
    rule = next(i for i, ln in enumerate(lines) if set(ln.replace(" ", "")) == {"-"})
    header = re.split(r"\s{2,}", lines[rule - 1].strip())
    out = {}
    for ln in lines[rule + 1:]:
        if not ln or ln.startswith(" ") or ln.startswith("note"):
            break
        row = re.split(r"\s{2,}", ln.strip())
        out[row[0]] = dict(zip(header, row, strict=True))
    return out


def test_policies_read_baseline_first_then_the_registry_order():
    names = ["pollux", "zeta.py:Mine", "tiresias", "dynamic", "fixed"]
    assert ordered_policies(names, "fixed") == ["fixed", "dynamic", "tiresias", "pollux",
                                                "zeta.py:Mine"]
    assert ordered_policies(names, "pollux")[:3] == ["pollux", "fixed", "dynamic"]
    assert ordered_policies(names, "absent") == ordered_policies(names)
    order = policy_order()
    assert order[:2] == ["fixed", "dynamic"] and order[-1] == "pollux"


def test_the_ratio_column_divides_by_the_baselines_mean_jct():
    rows = [summary("pollux", 30.0), summary("fixed", 60.0), summary("sia", 45.0)]
    text = format_table(rows, "SIMULATED: toy", seed=7)
    grid = cells(text)
    assert list(grid) == ["fixed", "sia", "pollux"]
    assert grid["pollux"]["vs fixed"] == "0.50" and grid["sia"]["vs fixed"] == "0.75"
    assert grid["fixed"]["vs fixed"] == "1.00"
    assert grid["pollux"]["mean JCT"] == "0.50"  # 30 s in minutes, the one unit
    assert "JCT and makespan in minutes" in text
    assert "one sample (seed 7); for means with 95% CIs run `coadapt experiment --seeds N`" in text
    other = cells(format_table(rows, "x", baseline="pollux"))
    assert list(other)[0] == "pollux" and other["fixed"]["vs pollux"] == "2.00"


def test_a_missing_baseline_drops_the_column_with_a_note():
    text = format_table([summary("pollux", 30.0)], "t", baseline="fixed")
    assert "vs fixed" not in cells(text)["pollux"]
    assert "note: no 'vs fixed' column: fixed did not run" in text


def test_a_baseline_or_policy_without_completions_reads_as_a_dash():
    rows = [summary("fixed", None, completed=0), summary("pollux", 30.0, completed=3)]
    text = format_table(rows, "t")
    grid = cells(text)
    assert grid["fixed"]["vs fixed"] == "-" and grid["fixed"]["mean JCT"] == "-"
    assert grid["fixed"]["done"] == "0/4" and grid["pollux"]["done"] == "3/4"
    assert "fixed completed no job: no ratio to it" in text
    assert "fixed, pollux: completed fewer jobs than the workload holds" in text


def test_one_unit_per_table_hours_for_long_runs():
    t = run_table([summary("fixed", 7200.0, makespan=5 * 3600.0)])
    assert t.unit.short == "h" and t.rows[0][2] == "2.00"
    assert "JCT and makespan in hours" in format_table([summary("fixed", 7200.0,
                                                                makespan=5 * 3600.0)])


def test_legend_one_line_per_column_and_labels():
    text = format_table([summary("fixed", 60.0)], "LIVE: box", calibration="calibration: x",
                        seed=1)
    legend = [ln.strip() for ln in text.splitlines() if ln.startswith("  ")]
    keys = [ln.split()[0] for ln in legend]
    for k in ("done", "JCT", "makespan", "vs", "util", "rho", "max", "rho>1.1", "Jain",
              "decide", "wall"):
        assert k in keys
    assert any("JCT / T_iso" in ln for ln in legend)
    assert any("Jain's index over rho" in ln for ln in legend)
    assert text.splitlines()[0] == "SIMULATED: LIVE: box"  # simulated summaries say so
    assert text.splitlines()[1] == "calibration: x"  # not 'calibration: calibration: x'


def test_live_summaries_keep_their_title_and_say_one_run():
    text = format_table([summary("fixed", 60.0, simulated=False)], "LIVE: box", seed=2)
    assert text.startswith("LIVE: box") and "SIMULATED" not in text
    assert samples_line(2, simulated=False) in text


def test_old_callers_positional_title_still_work():
    text = format_table([summary("fixed", 60.0)], "SIMULATED: old")
    assert text.startswith("SIMULATED: old") and "one sample (one seed)" in text


def test_markdown_table_has_the_same_cells():
    rows = [summary("fixed", 60.0), summary("pollux", 30.0)]
    md = "\n".join(markdown_table(rows))
    assert "| policy | done | mean JCT |" in md
    assert "| pollux | 4/4 | 0.50 |" in md
    assert "- **vs fixed**: mean JCT / fixed's mean JCT" in md


@pytest.mark.parametrize("bad", [float("nan"), None])
def test_non_finite_values_are_dashes(bad):
    row = {**summary("fixed", 60.0), "utilization": bad}
    assert cells(format_table([row]))["fixed"]["util"] == "-"
