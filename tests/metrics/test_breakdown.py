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


def test_gathered_on_the_way_through_a_stream_it_is_the_same():
    events = [ev(0, "header", None), ev(10, "submit", "a"), ev(15, "allocate", "a", replicas=2),
              ev(18, "start", "a", truth="network"), ev(75, "complete", "a")]
    acc = Breakdown()
    assert list(acc.passing(iter(events))) == events  # every event passes, in order
    assert acc.result() == breakdown(events)
    assert acc.result()["modeled_frac"] == pytest.approx(1.0)
