import pytest

from coadapt.metrics.breakdown import Breakdown, breakdown


def ev(t, kind, job, **kw):
    return {"t": t, "kind": kind, "job": job, **kw}


def test_wait_run_and_modeled_share_from_the_log():
    events = [
        ev(0, "header", None),
        ev(10, "submit", "a"), ev(15, "allocate", "a", replicas=2),
        ev(18, "start", "a", truth="measured"),
        ev(45, "allocate", "a", replicas=4), ev(48, "start", "a", truth="network"),
        ev(75, "complete", "a"),
        ev(20, "submit", "b"), ev(20, "allocate", "b", replicas=0),  # queued, no slots
        ev(45, "allocate", "b", replicas=1), ev(47, "start", "b", truth="measured"),
        ev(95, "complete", "b"),
        ev(90, "submit", "c"),  # never started
    ]
    out = breakdown(events)
    assert out["wait_mean"] == pytest.approx(((15 - 10) + (45 - 20)) / 2)
    assert out["run_mean"] == pytest.approx(((75 - 15) + (95 - 45)) / 2)
    assert out["delay_mean"] == pytest.approx(((18 - 15) + (48 - 45) + (47 - 45)) / 2)
    measured = 2 * 30 + 1 * 50
    modeled = 4 * 30
    assert out["modeled_frac"] == pytest.approx(modeled / (measured + modeled))


def test_empty_log_gives_none():
    assert breakdown([ev(0, "header", None)]) == {"wait_mean": None, "run_mean": None,
                                                  "delay_mean": None, "modeled_frac": None}


def test_gathered_in_the_tallys_pass_it_is_the_same(tmp_path):
    import json

    from coadapt.metrics import tally_log

    events = [ev(0, "header", None, mode="simulate", policy="p"), ev(10, "submit", "a"),
              ev(15, "allocate", "a", replicas=2), ev(18, "start", "a", truth="network"),
              ev(75, "complete", "a", jct=65.0)]
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    seen = []
    acc = Breakdown()
    tally = tally_log(path, also=lambda e: (seen.append(e), acc.add(e)))
    assert seen == events  # every event passes, in order
    assert tally.completes["a"][0] == 75
    assert acc.result() == breakdown(events)
    assert acc.result()["modeled_frac"] == pytest.approx(1.0)
