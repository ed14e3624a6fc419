"""Property: any machine calibration (``live-costs.json``) either loads as costs
whose every number means something, or is refused by CostError naming the
file; never another exception, and never slowly. The documents are the
shipped calibration with leaves replaced, keys renamed or deleted, and
re-encoded (BOM, CRLF, UTF-16, junk)."""

from __future__ import annotations

import json
import logging
import math
import re
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsontree import node_paths, parent_of

from coadapt.world.calibration import calibration_changes, format_changes
from coadapt.world.costs import (
    CostError,
    LiveCosts,
    calibration_line,
    describe_calibration,
    previous_calibration,
    resolve_costs,
)

SHIPPED = Path(__file__).resolve().parents[2] / "profiles" / "live-costs.json"
DOC: dict[str, Any] = json.loads(SHIPPED.read_text(encoding="utf-8"))
EXAMPLES = 250
APP = next(iter(DOC["types"]))


ALL = node_paths(DOC)
READ = [p for p in ALL if p[0] == "types" or p[:2] in (("meta", "machine"), ("meta", "cores"))]
paths = st.one_of(st.sampled_from(READ), st.sampled_from([*ALL, (), ("types",), ("meta",)]))
values = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, -1, -0.5, 0, 0.0, 1, 2.5, 1e308, 10**30,
                     10**400, "x", "1", "", None, True, False, [], {}, [1], {"1": 1},
                     {"a": "b"}, [[1]], "coadapt-live-costs", 2, 3]),
    st.floats(), st.integers(), st.text(max_size=5))
keys = st.sampled_from(["0", "-1", "1.5", "", "abc", "99999999999", " 1", "1_0", "any", "２",
                        "start", "steps"])
mutations = st.lists(st.one_of(st.tuples(st.just("set"), paths, values),
                               st.tuples(st.just("del"), paths, st.none()),
                               st.tuples(st.just("key"), paths, keys)), min_size=1, max_size=4)
encodings = st.sampled_from(["utf-8"] * 6 + ["bom", "crlf", "bom-crlf", "compact", "utf-16",
                                              "utf-16-le", "latin-1-junk", "truncated"])


def mutate(doc: Any, ops: list[tuple]) -> Any:
    """``doc`` with each (op, path, value) applied in turn; a path the earlier
    ones took away is skipped. ``()`` is the document itself."""
    doc = json.loads(json.dumps(doc))
    for op, path, value in ops:
        if not path:
            doc = value if op == "set" else doc
            continue
        parent = parent_of(doc, path)
        if parent is None:
            continue
        last = path[-1]
        if op == "set":
            parent[last] = value
        elif op == "del":
            del parent[last]
        elif isinstance(parent, dict):
            parent[value] = parent.pop(last)
    return doc


def encode(doc: Any, how: str) -> bytes:
    text = json.dumps(doc, indent=None if how == "compact" else 1)
    if "crlf" in how:
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8")
    if how.startswith("bom"):
        return b"\xef\xbb\xbf" + data
    if how.startswith("utf-16"):
        return text.encode(how)
    if how == "latin-1-junk":
        return data[: len(data) // 2] + "é ÿ".encode("latin-1") + data[len(data) // 2:]
    if how == "truncated":
        return data[: len(data) * 2 // 3]
    return data


def valid(costs: LiveCosts) -> None:
    """Every number a loaded calibration charges means something."""
    assert costs.types
    for app, t in costs.types.items():
        for table in (t.start, t.restart, t.eval):
            assert table and all(isinstance(k, int) and k >= 1 for k in table)
            assert all(math.isfinite(v) and v >= 0 for v in table.values())
        assert math.isfinite(t.verify) and t.verify >= 0
        assert all(math.isfinite(v) and v > 0 for v in t.colocation.values())
        for f in (t.compute_factor, t.sync_factor):
            assert math.isfinite(f) and f > 0
        for p in t.steps:
            assert p.workers >= 1 and p.micro >= 1 and p.samples >= 0
            assert math.isfinite(p.step) and p.step > 0 and math.isfinite(p.sync) and p.sync >= 0
        for k in (1, 2, 64):
            assert math.isfinite(costs.launch(app, k, restart=k == 2)) and costs.eval(app, k) >= 0
        assert costs.finish(app) >= 0 and costs.colocation(app, ["x"]) > 0
    assert math.isfinite(costs.poll_lag) and costs.policy_restart_delay() >= 0
    costs.scaled(1.5).require(costs.types)
    assert calibration_line(costs) and describe_calibration(costs)


def check(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    t0 = time.perf_counter()
    try:
        costs = LiveCosts.load(path)
    except CostError as err:
        assert re.match(re.escape(str(path)) + r"(:\d+)?: ", str(err)), err
        assert str(err).count("\n") == 0, err
    else:
        valid(costs)
        # the --calibration reader and what 'coadapt calibrate' compares with
        assert resolve_costs(str(path), "profiles").choice == str(path)
        before = previous_calibration(str(path.parent), root=path.parent / "none")
        assert before is not None
        assert format_changes(calibration_changes(before[1], before[1]), before[0])
    assert time.perf_counter() - t0 < 1.0


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=mutations, how=encodings)
@example(ops=[("set", ("types",), [])], how="utf-8")
@example(ops=[("set", ("types",), {})], how="utf-8")
@example(ops=[("set", ("types", APP, "start", "1"), math.nan)], how="utf-8")
@example(ops=[("set", ("types", APP, "verify"), math.inf)], how="utf-8")
@example(ops=[("set", ("types", APP, "eval", "2"), -1)], how="utf-8")
@example(ops=[("set", ("types", APP, "start", "1"), 10**400)], how="utf-8")
@example(ops=[("key", ("types", APP, "start", "1"), "0")], how="utf-8")
@example(ops=[("set", ("meta", "cores"), 3)], how="utf-8")
@example(ops=[("set", ("meta", "machine"), None), ("set", ("meta", "cores"), 3)], how="utf-8")
@example(ops=[("set", ("meta",), [])], how="utf-8")
@example(ops=[("set", (), [])], how="utf-8")
@example(ops=[("set", (), "x")], how="utf-8")
@example(ops=[("del", ("types",), None)], how="utf-8")
@example(ops=[("set", ("types", APP, "steps"), {})], how="utf-8")
@example(ops=[("set", ("types", APP), [])], how="utf-8")
@example(ops=[("set", ("version",), True)], how="bom-crlf")
@example(ops=[("set", ("version",), 2)], how="bom")
@example(ops=[("set", ("version",), 1)], how="utf-16")
@example(ops=[("set", ("version",), 1)], how="utf-16-le")
def test_any_calibration_loads_or_names_the_file(tmp_path, ops, how):
    check(tmp_path / "live-costs.json", encode(mutate(DOC, ops), how))


@settings(max_examples=EXAMPLES // 5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
@example(data=b"[" * 100_000)
@example(data=b"1" * 5000)
@example(data=b"")
@example(data=b"\xef\xbb\xbf{}")
def test_any_bytes_load_or_name_the_file(tmp_path, data):
    check(tmp_path / "live-costs.json", data)


def test_the_shipped_calibration_loads_with_a_bom_and_crlf(tmp_path):
    path = tmp_path / "live-costs.json"
    path.write_bytes(b"\xef\xbb\xbf" + SHIPPED.read_bytes().replace(b"\n", b"\r\n"))
    assert LiveCosts.load(path).types.keys() == DOC["types"].keys()


def test_a_folder_as_calibration_is_refused_naming_it(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    try:
        resolve_costs(str(tmp_path), "profiles")
    except CostError as err:
        assert str(err).startswith(f"{tmp_path}: a folder"), err
    else:
        raise AssertionError("a folder loaded as a calibration")
