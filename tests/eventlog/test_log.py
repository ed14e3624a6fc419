import gzip

from coadapt.eventlog import EventLog, log_in, logs_below, read_events


def test_a_gzipd_log_is_flushed_per_event_and_a_cut_one_reads_to_its_last_event(tmp_path):
    path = tmp_path / "p" / "events.jsonl.gz"
    log = EventLog(path)
    log.header(mode="simulation")
    for i in range(50):
        log.emit(float(i), "submit", f"j{i}", allocation=[0] * 500)
    # not closed (a killed run): every event was flushed, the stream has no trailer
    events = list(read_events(path))
    assert [e["job"] for e in events[1:]] == [f"j{i}" for i in range(50)]
    log.close()
    assert len(list(read_events(path))) == 51
    assert path.stat().st_size < 50 * 1500 / 5  # an entry per node compresses
    assert gzip.decompress(path.read_bytes()).count(b"\n") == 51


def test_log_in_and_logs_below_find_either_name(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "events.jsonl").write_text("")
    (tmp_path / "b" / "events.jsonl.gz").write_bytes(gzip.compress(b""))
    assert log_in(tmp_path / "a").name == "events.jsonl"
    assert log_in(tmp_path / "b").name == "events.jsonl.gz"
    assert log_in(tmp_path / "c").name == "events.jsonl"  # not there yet: the plain name
    assert [p.parent.name for p in logs_below(tmp_path)] == ["a", "b"]
