import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coadapt.metrics import Tally, job_table, summarize, tally_log, timeline


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


def _naive_changes(events):
    """The per-event loop the arrays replace: (slot changes, goodput changes)."""
    held, good, slots, goods = {}, {}, [], []
    for e in sorted(events, key=lambda e: e["t"]):
        j = e.get("job")
        if e["kind"] == "allocate":
            slots.append((e["t"], e["replicas"] - held.get(j, 0.0)))
            held[j] = e["replicas"]
            goods.append((e["t"], -good.get(j, 0.0)))
            good[j] = 0.0
        elif e["kind"] in ("start", "epoch") and e.get("goodput") is not None:
            goods.append((e["t"], e["goodput"] - good.get(j, 0.0)))
            good[j] = e["goodput"]
        elif e["kind"] == "complete":
            slots.append((e["t"], -held.get(j, 0.0)))
            goods.append((e["t"], -good.get(j, 0.0)))
            held[j] = good[j] = 0.0
    return slots, goods


_event = st.tuples(st.integers(0, 20).map(float), st.sampled_from(["allocate", "epoch", "complete"]),
                   st.sampled_from("abc"), st.integers(0, 8))


@given(st.lists(_event, max_size=40))
def test_the_cluster_changes_are_the_per_event_loop_s(raw):
    events = [{"t": t, "kind": k, "job": j, "replicas": v, "goodput": v / 2.0} for t, k, j, v in raw]
    (ts, ds), (tg, dg) = Tally.of(events).changes()
    slots, goods = _naive_changes(events)
    assert list(zip(ts.tolist(), ds.tolist(), strict=True)) == slots
    assert list(zip(tg.tolist(), dg.tolist(), strict=True)) == goods


def test_a_cut_log_or_two_runs_in_one_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "events.jsonl"
    for events, says in ((_events()[1:], ":1: no header"), (_events() + _events()[:1], "2 headers"),
                         ([], "empty")):
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
        with pytest.raises(ValueError, match=says):
            tally_log(path)
    path.write_text("".join(json.dumps(e) + "\n" for e in _events()))
    assert summarize(tally_log(path)) == summarize(_events())
