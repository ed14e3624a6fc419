"""Property: every workload row either loads as a job within the stated bounds
or is refused by the reader's own error naming the file and the line; never
another exception, and never slowly."""

from __future__ import annotations

import math
import re
import time

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from coadapt.util.paths import name_problem
from coadapt.world.workload import (
    MAX_BATCH,
    MAX_REPLICAS,
    MAX_SUBMIT_TIME,
    MAX_WEIGHT,
    WorkloadError,
    load_workload,
)

HEADER = "name,time,application,num_replicas,batch_size,weight"
EXAMPLES = 400

numbers = st.one_of(
    st.integers(min_value=-10, max_value=10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "1e15", "1e9", "1e12", "3.5", "0", "", " 7 ", "1_0",
                     "0x10", "١٢", "1e-400", "1e400"]),
)
names = st.one_of(
    st.from_regex(r"[A-Za-z0-9._-]{1,140}", fullmatch=True),
    st.sampled_from(["../../../x", "/tmp/x", "..", ".", "a b", "", "x" * 129, "a\\b", "ok"]),
    st.text(max_size=20),
)
fields = st.one_of(numbers, names, st.text(max_size=12), st.sampled_from(['"', '""', "\r", "\n"]))


@st.composite
def rows(draw) -> str:
    """A row: mostly the five columns and a weight, sometimes too few or too many."""
    row = [draw(names), draw(numbers), draw(st.sampled_from(["toy", "gpt", "", "TOY"])),
           draw(numbers), draw(numbers), draw(numbers)]
    extra = draw(st.integers(min_value=-3, max_value=3))
    row = row[:len(row) + extra] if extra < 0 else row + [draw(fields) for _ in range(extra)]
    return ",".join(row)


def check(path, text: bytes) -> None:
    path.write_bytes(text)
    t0 = time.perf_counter()
    try:
        wl = load_workload(str(path), {"toy"})
    except WorkloadError as err:
        named = re.match(re.escape(str(path)) + r":(\d+:)? ", str(err))  # file:line: or file:
        assert named is not None, err
        if text.startswith(HEADER.encode()) and b"\0" not in text:
            assert named.group(1), err  # a UTF-8 CSV with its header: the line is named too
    else:
        for j in wl.jobs:
            assert name_problem(j.name) is None and j.application == "toy"
            assert math.isfinite(j.submit_time) and 0 <= j.submit_time <= MAX_SUBMIT_TIME
            assert 1 <= j.num_replicas <= MAX_REPLICAS and 1 <= j.batch_size <= MAX_BATCH
            assert 0 < j.weight <= MAX_WEIGHT and j.line >= 2
    assert time.perf_counter() - t0 < 1.0


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row=rows())
@example(row="../../../x,0,toy,1,32,1")
@example(row="a,1e15,toy,1,32,1")
@example(row="a,0,toy,1e9,1e12,")
@example(row="a,0,toy,1,32,1,extra")
def test_every_row_loads_or_names_file_and_line(tmp_path, row):
    check(tmp_path / "w.csv", f"{HEADER}\n{row}\n".encode())


@settings(max_examples=EXAMPLES // 4, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=200), encoding=st.sampled_from(["utf-8", "utf-8-sig", "utf-16",
                                                              "latin-1", "raw"]))
def test_any_bytes_load_or_name_the_file(tmp_path, data, encoding):
    text = data if encoding == "raw" else \
        (HEADER + "\n" + data.decode("latin-1") + "\n").encode(encoding, errors="replace")
    check(tmp_path / "w.csv", text)
