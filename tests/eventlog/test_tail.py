"""Reading a worker's event file while it is being written."""

import json

from coadapt.eventlog.tail import EventTail


def test_partial_last_line_waits_for_its_newline(tmp_path):
    path = tmp_path / "e.jsonl"
    tail = EventTail(path)
    assert tail.read() == []  # no file yet
    with open(path, "w") as fh:
        fh.write(json.dumps({"t": 1, "kind": "a"}) + "\n" + '{"t": 2, "ki')
    assert [e["t"] for e in tail.read()] == [1]
    with open(path, "a") as fh:
        fh.write('nd": "b"}\nnot json\n' + json.dumps({"t": 3, "kind": "c"}) + "\n")
    assert [e["t"] for e in tail.read()] == [2, 3]  # the malformed line is skipped
    assert tail.read() == []


def test_offset_resumes_where_a_reader_stopped(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text("".join(json.dumps({"t": i, "kind": "x"}) + "\n" for i in range(5)))
    first = EventTail(path)
    assert len(first.read()) == 5
    again = EventTail(path, offset=first.offset)
    with open(path, "a") as fh:
        fh.write(json.dumps({"t": 9, "kind": "x"}) + "\n")
    assert [e["t"] for e in again.read()] == [9]
