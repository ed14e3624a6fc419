"""report.md of simulate and live folders, rebuilt from hand-written logs."""

from __future__ import annotations

import time

import pytest
from reportlogs import REFERENCE_CAL, Job, live_folder, three_policies, write_log

from coadapt.report.markdown import write_run_report
from coadapt.report.runlog import ReportError, calibration_of, read_runs, settings_of

PNG = b"\x89PNG\r\n\x1a\n"


def pngs(folder) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in (folder / "figures").glob("*.png")
            if p.read_bytes()[:8] == PNG}


def test_simulated_report_explains_table_settings_figures_and_caveats(tmp_path):
    three_policies(tmp_path, calibration=REFERENCE_CAL)
    t0 = time.perf_counter()
    path = write_run_report(tmp_path)
    assert time.perf_counter() - t0 < 20.0
    text = path.read_text()
    assert path == tmp_path / "report.md"
    assert text.startswith("# coadapt run report (SIMULATED): toy-wl on 2x2, 2 jobs, "
                           "3 policies")
    # the table: fixed first, pollux (registered) before the unregistered 'slow'
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "policy" not in ln]
    assert [r.split("|")[1].strip() for r in rows[:3]] == ["fixed", "pollux", "slow"]
    assert "| pollux | 2/2 | 0.83 |" in text  # 50 s in minutes
    assert "0.50 |" in rows[1]  # pollux vs fixed: 50 / 110
    assert "| slow | 0/2 | - |" in text
    assert "JCT and makespan in minutes." in text and "- **rho**:" in text
    assert "one sample (seed 3)" in text
    # settings from the header, calibration from its dict
    assert "- workload: toy-wl (traces/toy-wl.csv), 2 jobs" in text
    assert "- cluster: 2x2 (4 slots)" in text and "- round interval: 10.0 s" in text
    assert "- policies: fixed, pollux, slow" in text
    assert ("- calibration: profiles/live-costs.json (reference machine (host ref); "
            "2026-12-03): the shipped reference machine's") in text
    # caveats
    assert "Calibration: the shipped reference machine's" in text
    assert "Not every job completed under slow" in text
    # every figure linked and written, readable PNGs, the one without completions too
    figs = pngs(tmp_path)
    assert set(figs) == {"jct_cdf.png", "slowdown.png", "allocation.png", "utilization.png"}
    assert all(size > 5000 for size in figs.values())
    for name in figs:
        assert f"](figures/{name})" in text


def test_report_baseline_reorders_and_renames_the_ratio(tmp_path):
    three_policies(tmp_path)
    text = write_run_report(tmp_path, baseline="pollux", plots=False).read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "policy" not in ln]
    assert rows[0].startswith("| pollux |") and "vs pollux" in text
    assert "## Figures" not in text and not (tmp_path / "figures").exists()
    missing = write_run_report(tmp_path, baseline="gavel", plots=False).read_text()
    assert "no 'vs gavel' column: gavel did not run" in missing


def test_live_report_sets_the_prediction_beside_live(tmp_path):
    live_folder(tmp_path)
    text = write_run_report(tmp_path).read_text()
    assert text.startswith("# coadapt run report (LIVE)")
    assert "**LIVE**: measured with real training processes on host box" in text
    assert "## Predicted beside live" in text
    # fixed: predicted a 120 s, b 90 s (mean 105) against live 100 s each: +5%
    assert "| fixed | 1.75 | 1.67 | +5% | 15% | 2 |" in text
    assert "one live run" in text and "coadapt experiment" not in text
    assert "Calibration: the shipped reference machine's" in text
    assert "predicted_vs_live.png" in pngs(tmp_path)
    assert "](figures/predicted_vs_live.png)" in text
    assert [r.policy for r in read_runs(tmp_path)] == ["fixed", "pollux"]  # not prediction/


def test_no_logs_or_a_bad_line_is_a_report_error(tmp_path):
    with pytest.raises(ReportError, match="no <policy>/events.jsonl below it"):
        write_run_report(tmp_path)
    path = write_log(tmp_path, "fixed", [Job("a", 0.0, 5.0)])
    with path.open("a") as fh:
        fh.write("not json\n{}\n")
    with pytest.raises(ReportError, match=r"fixed/events.jsonl:\d+: not a JSON event"):
        write_run_report(tmp_path)


def test_a_run_without_fairness_or_completions_still_reports(tmp_path):
    write_log(tmp_path, "fixed", [Job("a", 0.0, None)])
    text = write_run_report(tmp_path).read_text()
    assert "| fixed | 0/1 | - |" in text
    assert len(pngs(tmp_path)) == 4  # placeholders that say what is missing


def test_calibration_of_every_header_shape():
    new = calibration_of({"calibration": {**REFERENCE_CAL, "reference": False,
                                          "this_machine": True}})
    assert new.line.endswith(": this machine's") and not new.other
    other = calibration_of({"calibration": {"file": "c.json", "machine": {"cpu_model": "EPYC",
                                                                          "cores": 8},
                                            "reference": False, "this_machine": False}})
    assert other.other and not other.reference and "EPYC, 8 cores" in other.line
    live = calibration_of({"calibration": {"file": "out/calibration.json",
                                           "about": "x.json: ANOTHER machine's"}})
    assert live.other and live.line.startswith("out/calibration.json: x.json")
    old = calibration_of({"live_costs": "profiles/live-costs.json"})
    assert old.reference and "not recorded" in old.line
    none = calibration_of({"live_costs": None})
    assert not none.present and none.line.startswith("none")


def test_settings_list_each_value_when_logs_differ(tmp_path):
    write_log(tmp_path, "fixed", [Job("a", 0.0, 5.0)], seed=1)
    write_log(tmp_path, "pollux", [Job("a", 0.0, 5.0)], seed=2)
    s = settings_of(read_runs(tmp_path))
    assert dict(s.items)["seed"] == "1 / 2" and s.seed == 1
