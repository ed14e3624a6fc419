import pytest

from coadapt.metrics import job_table, summarize, timeline


def ev(t, kind, job=None, **kw):
    return {"t": t, "kind": kind, "job": job, **kw}


EVENTS = [
    ev(0, "header", mode="simulate", policy="p", workload="w", total_slots=4,
       t_iso={"a": [100.0, 60.0, 50.0, 40.0]}),
    ev(0, "submit", "x", application="a"),
    ev(0, "submit", "y", application="a"),
    ev(0, "allocate", "x", replicas=2, allocation=[2]),
    ev(0, "allocate", "y", replicas=2, allocation=[2]),
    ev(10, "start", "x", goodput=5.0),
    ev(10, "start", "y", goodput=5.0),
    ev(100, "complete", "x", restarts=0),
    ev(200, "complete", "y", restarts=1),
    ev(0, "round", decision_ms=1.0),
    ev(60, "round", decision_ms=3.0),
]


def test_jct_and_fairness_by_hand():
    jobs = job_table(EVENTS).sort("job")
    assert jobs["jct"].to_list() == [100, 200]
    # x: 2 jobs all its life -> share 2 -> T_iso 60 -> rho 100/60
    # y: 2 jobs for 100 s, 1 job for 100 s -> n_avg 1.5 -> share floor(4/1.5)=2 -> rho 200/60
    assert jobs["n_avg"].to_list() == pytest.approx([2.0, 1.5])
    assert jobs["rho"].to_list() == pytest.approx([100 / 60, 200 / 60])


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
