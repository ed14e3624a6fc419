"""Property: any profile folder either loads as profiles whose numbers mean
something, or is refused by ProfileError naming a file in it (and the line
and field where they are known); never another exception, and never slowly.
The folders are a shipped profile with ``profile.json`` leaves replaced or
deleted, CSV cells, columns and lines changed, files re-encoded (BOM, CRLF,
UTF-16, junk), removed or made folders, read by every scheme (``DIR``,
``cpu:``, ``adaptdl:``, ``sia:``)."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsontree import node_paths, parent_of

from coadapt.world.profiles.profile import ProfileError
from coadapt.world.profiles.sources import load_profiles

SHIPPED = Path(__file__).resolve().parents[2] / "profiles" / "mlp-mnist1d"
FILES = {p.name: p.read_bytes() for p in sorted(SHIPPED.iterdir()) if p.suffix in (".json", ".csv")}
DOC: dict[str, Any] = json.loads(FILES["profile.json"])
CSVS = sorted(n for n in FILES if n.endswith(".csv"))
EXAMPLES = 200
J = "json"


ALL = node_paths(DOC, list_cap=3)
READ = [p for p in ALL if p[0] in ("job", "perf_params", "format", "version", "machine")
        or p[:2] == ("curves", "by_batch_size") and len(p) <= 6]
values = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, -1, -0.5, 0, 0.5, 1, 3, 1e308, 10**30,
                     10**400, "x", "", None, True, False, [], {}, [1], {"a": 1}]),
    st.floats(), st.integers(), st.text(max_size=4))
cells = st.one_of(
    st.sampled_from(["NaN", "nan", "inf", "-inf", "-1", "-0.001", "0", "", "abc", "1e400", "1e308",
                     "99999999999999999999", " 3 ", '"', "1,2", "true", "1.5", "٣", "0x10"]),
    st.floats().map(repr), st.text(max_size=4))
encodings = st.sampled_from(["bom", "crlf", "bom-crlf", "utf-16", "utf-16-le", "latin-1-junk",
                             "truncated", "empty", "binary", "header-only"])
json_paths = st.one_of(st.sampled_from(READ), st.sampled_from(ALL))
edits = st.one_of(
    st.tuples(st.just("json"), json_paths, values),
    st.tuples(st.just("json-del"), json_paths, st.none()),
    st.tuples(st.just("cell"), st.sampled_from(CSVS),
              st.tuples(st.integers(0, 30), st.integers(0, 15), cells)),
    st.tuples(st.just("drop-column"), st.sampled_from(CSVS), st.integers(0, 15)),
    st.tuples(st.just("add-column"), st.sampled_from(CSVS), st.sampled_from(["x", "step_time", ""])),
    st.tuples(st.just("drop-line"), st.sampled_from(CSVS), st.integers(0, 30)),
    st.tuples(st.just("encode"), st.sampled_from([*CSVS, "profile.json"]), encodings),
    st.tuples(st.just("remove"), st.sampled_from([*CSVS, "profile.json"]), st.booleans()),
)
schemes = st.sampled_from(["", "", "cpu:", "adaptdl:", "sia:"])


def _set(doc: Any, path: tuple, value: Any, delete: bool) -> None:
    parent = parent_of(doc, path)
    if parent is None:
        return
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


def _encode(data: bytes, how: str) -> bytes:
    text = data.decode("utf-8")
    if how == "header-only":
        return text.split("\n", 1)[0].encode() + b"\n"
    if how.startswith("utf-16"):
        return text.encode(how)
    return {"bom": b"\xef\xbb\xbf" + data, "crlf": data.replace(b"\n", b"\r\n"),
            "bom-crlf": b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"),
            "latin-1-junk": data[:40] + "é,ÿ".encode("latin-1") + data[40:],
            "truncated": data[: len(data) // 2], "empty": b"",
            "binary": bytes(range(256))}[how]


def build(root: Path, ops: list[tuple]) -> Path:
    """The shipped profile with ``ops`` applied, as ``root/mlp``."""
    doc = json.loads(json.dumps(DOC))
    files: dict[str, bytes | None] = dict(FILES)
    tables = {n: [line.split(",") for line in files[n].decode().splitlines()] for n in CSVS}
    raw: dict[str, bytes] = {}
    for op, where, arg in ops:
        if op in ("json", "json-del"):
            _set(doc, where, arg, op == "json-del")
        elif op == "cell":
            rows = tables[where]
            row = rows[arg[0] % len(rows)]
            row[arg[1] % len(row)] = arg[2]
        elif op == "drop-column":
            col = arg % len(tables[where][0])
            tables[where] = [r[:col] + r[col + 1:] for r in tables[where]]
        elif op == "add-column":
            tables[where] = [r + [arg if i == 0 else "1"] for i, r in enumerate(tables[where])]
        elif op == "drop-line":
            del tables[where][arg % len(tables[where])]
        elif op == "encode":
            if where == "profile.json" and files[where] is None:
                continue  # removed by an earlier op: nothing left to re-encode
            raw[where] = _encode(files[where] if where == "profile.json" else
                                 "\n".join(",".join(r) for r in tables[where]).encode() + b"\n",
                                 arg)
        else:
            files[where] = None if arg else b"dir"
            raw.pop(where, None)
    folder = root / "mlp"
    folder.mkdir(parents=True)
    for name, data in files.items():
        if data is None:
            continue
        if data == b"dir":
            (folder / name).mkdir()
            continue
        if name in raw:
            data = raw[name]
        elif name == "profile.json":
            data = json.dumps(doc, indent=2).encode()
        else:
            data = "\n".join(",".join(r) for r in tables[name]).encode() + b"\n"
        (folder / name).write_bytes(data)
    return folder


def valid(apps: dict) -> None:
    """Every number a loaded profile feeds the simulator means something."""
    assert apps
    for name, prof in apps.items():
        assert name == prof.name
        pl = prof.placements
        assert pl.height and (pl["step_time"] > 0).all() and (pl["sync_time"] >= 0).all()
        assert (pl["local_bsz"] >= 1).all()
        for col in ("step_time", "sync_time"):
            assert pl[col].is_finite().all()
        assert prof.validation
        for frame in prof.validation.values():
            assert frame.height and all(frame[c].is_finite().all() for c in
                                        ("progress", "metric", "grad_sqr", "grad_var"))
        for v in (prof.spread.step_cv, prof.spread.sync_cv, prof.spread.noise_cv):
            assert math.isfinite(v) and v >= 0
        s = prof.samples_to_target
        if s is not None:
            assert all(math.isfinite(v) and v > 0 for v in [*s.batch_sizes, *s.median])
        step, sync = prof.throughput((1,), float(prof.limits.min_local_bsz))
        assert not math.isnan(step) and not math.isnan(sync)


def check(root: Path, ops: list[tuple], scheme: str) -> None:
    build(root, ops)
    t0 = time.perf_counter()
    try:
        apps = load_profiles(f"{scheme}{root}")
    except ProfileError as err:
        named = re.match(re.escape(str(root)) + r"(/[^:\n]+)?(:\d+|:\?)?: ", str(err))
        assert named is not None, err
    else:
        valid(apps)
    assert time.perf_counter() - t0 < 2.0


def _folder(tmp_path: Path) -> Path:
    """A fresh folder per example (``tmp_path`` is shared by them)."""
    n = sum(1 for _ in tmp_path.iterdir())
    return tmp_path / f"p{n}"


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(edits, min_size=1, max_size=3), scheme=schemes)
@example(ops=[("cell", "curves.csv", (3, 3, "NaN"))], scheme="")
@example(ops=[(J, ("perf_params", "gamma"), math.nan)], scheme="")
@example(ops=[(J, ("perf_params", "alpha_c"), math.inf)], scheme="")
@example(ops=[(J, ("perf_params", "beta_c"), -1)], scheme="cpu:")
@example(ops=[(J, ("perf_params",), [])], scheme="")
@example(ops=[(J, ("job", "target"), math.nan)], scheme="")
@example(ops=[(J, ("job", "eval_every"), -1)], scheme="")
@example(ops=[(J, ("job", "max_batch_size"), 10**400)], scheme="")
@example(ops=[(J, ("curves",), [1])], scheme="")
@example(ops=[(J, ("curves", "by_batch_size", "32", "runs", 0), "x")], scheme="")
@example(ops=[(J, ("machine",), "x")], scheme="")
@example(ops=[("encode", "profile.json", "utf-16")], scheme="")
@example(ops=[("encode", "profile.json", "bom-crlf")], scheme="")
@example(ops=[("encode", "placements.csv", "bom-crlf"), ("encode", "curves.csv", "bom")],
         scheme="adaptdl:")
@example(ops=[("encode", "timings.csv", "binary")], scheme="")
@example(ops=[("cell", "placements.csv", (2, 2, "0"))], scheme="sia:")
@example(ops=[("cell", "timings.csv", (1, 13, "maybe"))], scheme="")
@example(ops=[("remove", "placements.csv", False)], scheme="")
@example(ops=[("add-column", "timings.csv", "step_time")], scheme="")
def test_any_profile_folder_loads_or_names_the_file(tmp_path, ops, scheme):
    check(_folder(tmp_path), ops, scheme)


def test_a_profile_with_a_bom_and_crlf_everywhere_loads(tmp_path):
    ops = [("encode", name, "bom-crlf") for name in [*CSVS, "profile.json"]]
    root = tmp_path / "p"
    build(root, ops)
    apps = load_profiles(str(root))
    valid(apps)
    assert set(apps) == {DOC["job"]["name"]}


def test_an_unusable_path_is_a_profile_error():
    for spec in ("cpu:a\0b", "x" * 5000, "adaptdl:/nonexistent", "sia:" + "y" * 5000):
        try:
            load_profiles(spec)
        except ProfileError:
            continue
        raise AssertionError(f"{spec[:20]} loaded")
