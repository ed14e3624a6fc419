from coadapt.metrics import Tally, job_table, summarize, timeline


def _events():
    return [
        {"t": 0.0, "kind": "header", "job": None, "policy": "p", "total_slots": 4, "mode": "x"},
        {"t": 0.0, "kind": "submit", "job": "a", "application": "toy"},
        {"t": 5.0, "kind": "submit", "job": "b", "application": "toy", "weight": 2.0},
        {"t": 10.0, "kind": "allocate", "job": "a", "replicas": 2, "allocation": [2, 0]},
        {"t": 12.0, "kind": "start", "job": "a", "goodput": 3.0},
        {"t": 20.0, "kind": "allocate", "job": "b", "replicas": 1, "allocation": [0, 1]},
        {"t": 30.0, "kind": "epoch", "job": "a", "goodput": 4.0},
        {"t": 30.0, "kind": "round", "job": None, "decision_ms": 2.0},
        {"t": 40.0, "kind": "complete", "job": "a", "restarts": 0},
        {"t": 50.0, "kind": "complete", "job": "b", "restarts": 1},
        {"t": 50.0, "kind": "fairness", "job": "a", "share": 2, "t_iso": 20.0, "n_avg": 1.5},
        {"t": 50.0, "kind": "end", "job": None, "wall_s": 1.0},
    ]


def test_a_streamed_tally_gives_the_figures_of_the_event_list():
    events = _events()
    tally = Tally.of(iter(events))  # one pass, as write_results reads a log
    assert summarize(tally) == summarize(events)
    assert job_table(tally).equals(job_table(events))
    jobs = job_table(events).to_dicts()
    assert [j["jct"] for j in jobs] == [40.0, 45.0] and jobs[0]["rho"] == 2.0
    line = timeline(events)
    assert line["used_slots"].to_list() == [2.0, 2.0, 3.0, 3.0, 1.0, 0.0]
    assert line["goodput"].to_list()[1:4] == [3.0, 3.0, 4.0]


def test_events_out_of_time_order_are_taken_in_time_order():
    events = _events()
    shuffled = events[:3] + events[5:7] + events[3:5] + events[7:]  # b's allocation first
    assert timeline(shuffled).equals(timeline(events))
