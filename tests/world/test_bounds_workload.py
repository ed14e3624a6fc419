"""The workload reader's bounds and encodings: every numeric field finite and in
range, extra fields refused, BOM and CRLF accepted, a file that is not UTF-8
text named, a directory refused; all as WorkloadError naming file and line."""

from __future__ import annotations

import pytest

from coadapt.world.workload import WorkloadError, check_requests, load_workload

HEADER = "name,time,application,num_replicas,batch_size"


def csv_file(tmp_path, text: str | bytes):
    p = tmp_path / "w.csv"
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, newline="")
    return str(p)


@pytest.mark.parametrize("row,msg", [
    ("a,inf,toy,1,32", r"w.csv:2: field 'time' is inf, must be a finite number"),
    ("a,-inf,toy,1,32", r"w.csv:2: field 'time' is -inf, must be a finite number"),
    ("a,nan,toy,1,32", r"w.csv:2: field 'time' is 'nan', expected float"),
    ("a,1e15,toy,1,32", r"w.csv:2: field 'time' is 1e15, must be <= 3.1536e\+08 \(10 years"),
    ("a,-1,toy,1,32", r"w.csv:2: field 'time' is -1, must be >= 0"),
    ("a,0,toy,1e9,32", r"w.csv:2: field 'num_replicas' is 1e9, must be <= 1e\+06"),
    ("a,0,toy,1,1e12", r"w.csv:2: field 'batch_size' is 1e12, must be <= 1e\+09"),
    ("a,0,toy,inf,32", r"w.csv:2: field 'num_replicas' is inf, must be a finite number"),
    ("a,0,toy,1,32,7", r"w.csv:2: 6 fields, the header names 5"),
])
def test_out_of_range_fields_and_extra_fields_are_refused(tmp_path, row, msg):
    with pytest.raises(WorkloadError, match=msg):
        load_workload(csv_file(tmp_path, f"{HEADER}\n{row}\n"), {"toy"})


def test_weight_has_a_ceiling(tmp_path):
    with pytest.raises(WorkloadError, match=r"w.csv:2: field 'weight' is 1e9, must be <= 1e\+06"):
        load_workload(csv_file(tmp_path, f"{HEADER},weight\na,0,toy,1,32,1e9\n"), {"toy"})


def test_bom_and_crlf_are_accepted(tmp_path):
    text = f"\ufeff{HEADER}\r\nb,20,toy,2,64\r\na,10,toy,1,32\r\n"
    w = load_workload(csv_file(tmp_path, text.encode("utf-8")), {"toy"})
    assert [(j.name, j.submit_time, j.line) for j in w.jobs] == [("a", 10.0, 3), ("b", 20.0, 2)]


def test_lines_are_counted_across_blank_lines(tmp_path):
    with pytest.raises(WorkloadError, match=r"w.csv:4: field 'time' is 'x'"):
        load_workload(csv_file(tmp_path, f"{HEADER}\na,0,toy,1,32\n\nb,x,toy,1,32\n"), {"toy"})


@pytest.mark.parametrize("data,msg", [
    (f"{HEADER}\na,0,toy,1,32\n".encode("utf-16"), r"w.csv: is UTF-16 text; save it as UTF-8"),
    (f"{HEADER}\na,0,toy,1,32\n".encode("utf-16-le"), r"w.csv:1: a NUL byte: a binary file"),
    (b"\x7fELF\x02\x01\x01\x00\x00", r"w.csv:1: a NUL byte: a binary file"),
    (f"{HEADER}\nj\xe9,0,toy,1,32\n".encode("latin-1"), r"w.csv:2: not UTF-8 text \(byte 0xe9\)"),
    (b"", r"w.csv:1: missing column\(s\) name"),
    (f"{HEADER}\n".encode(), r"w.csv:1: no jobs below the header"),
    (f'{HEADER}\n"a,0,toy,1,32\n'.encode(), r"w.csv:\d+: "),
])
def test_files_that_are_not_utf8_csv_are_named(tmp_path, data, msg):
    with pytest.raises(WorkloadError, match=msg):
        load_workload(csv_file(tmp_path, data), {"toy"})


def test_a_directory_is_a_clear_error_not_is_a_directory_error(tmp_path):
    with pytest.raises(WorkloadError, match=f"{tmp_path}: is a directory; give a workload CSV"):
        load_workload(str(tmp_path))


def test_check_requests_names_file_line_and_job(tmp_path):
    from toyprofile import make_toy

    limits = {"toy": make_toy().limits}  # batch 8..512, at most 16 replicas
    w = load_workload(csv_file(tmp_path, f"{HEADER}\nok,0,toy,16,512\nbig,5,toy,1,513\n"), {"toy"})
    with pytest.raises(WorkloadError, match=r"w.csv:3: field 'batch_size' is 513 for job big; "
                                            r"job type toy declares batches from 8 .* to 512"):
        check_requests(w, limits)
    check_requests(w, {})  # types without limits are the caller's
