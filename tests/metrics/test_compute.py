import pytest

from coadapt.metrics import job_table, summarize, timeline


def ev(t, kind, job=None, **kw):
    return {"t": t, "kind": kind, "job": job, **kw}


EVENTS = [
    ev(0, "header", mode="simulate", policy="p", workload="w", total_slots=4),
    ev(0, "submit", "x", application="a"),
    ev(0, "submit", "y", application="a", weight=4.0),
    ev(0, "allocate", "x", replicas=2, allocation=[2]),
    ev(0, "allocate", "y", replicas=2, allocation=[2]),
    ev(10, "start", "x", goodput=5.0),
    ev(10, "start", "y", goodput=5.0),
    ev(100, "complete", "x", restarts=0),
    ev(200, "complete", "y", restarts=1),
    ev(0, "round", decision_ms=1.0),
    ev(60, "round", decision_ms=3.0),
    # the shared yardstick's verdicts (sim.yardstick.append_fairness), written at the end
    ev(200, "fairness", "x", share=2, n_avg=2.0, t_iso=60.0, yardstick="shared"),
    ev(200, "fairness", "y", share=2, n_avg=1.5, t_iso=60.0, yardstick="shared"),
]


def test_jct_and_fairness_by_hand():
    jobs = job_table(EVENTS).sort("job")
    assert jobs["jct"].to_list() == [100, 200]
    # n_avg is this run's own contention: x saw 2 jobs all its life, y 2 then 1
    assert jobs["n_avg"].to_list() == pytest.approx([2.0, 1.5])
    # rho divides by the yardstick's T_iso, whatever the run itself did
    assert jobs["rho"].to_list() == pytest.approx([100 / 60, 200 / 60])
    assert jobs["n_iso"].to_list() == [2.0, 1.5] and jobs["weight"].to_list() == [1.0, 4.0]


def test_a_job_without_a_fairness_verdict_has_no_rho():
    jobs = job_table([e for e in EVENTS if e["kind"] != "fairness"])
    assert jobs["rho"].to_list() == [None, None] and jobs["jct"].to_list() == [100, 200]


def test_priority_split_separates_weighted_jobs():
    s = summarize(EVENTS)
    assert s["prio_avg_jct"] == 200 and s["rest_avg_jct"] == 100
    assert s["prio_mean_rho"] == pytest.approx(200 / 60)
    assert s["rest_mean_rho"] == pytest.approx(100 / 60)
    even = [dict(e, weight=1.0) if e["kind"] == "submit" else e for e in EVENTS]
    assert summarize(even)["prio_avg_jct"] is None


def test_summary_by_hand():
    s = summarize(EVENTS)
    assert s["avg_jct"] == 150 and s["makespan"] == 200 and s["completed"] == 2
    # slots: 4 busy for 100 s, then 2 for 100 s, over 4 slots x 200 s
    assert s["utilization"] == pytest.approx((400 + 200) / 800)
    assert s["decision_ms_median"] == 2.0
    rho = [100 / 60, 200 / 60]
    assert s["jain_rho"] == pytest.approx(sum(rho) ** 2 / (2 * sum(r * r for r in rho)))
    assert s["unfair_frac"] == 1.0 and s["max_rho"] == pytest.approx(200 / 60)


def test_timeline_goodput_steps():
    line = timeline(EVENTS)
    at = dict(zip(line["t"].to_list(), line["goodput"].to_list(), strict=False))
    assert at[0] == 0 and at[10] == 10.0 and at[100] == 5.0 and at[200] == 0.0
