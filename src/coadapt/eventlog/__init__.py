"""The one event log shared by simulation, live runs and job workers."""

from coadapt.eventlog.log import SCHEMA_VERSION, EventLog, read_events, run_header

__all__ = ["SCHEMA_VERSION", "EventLog", "read_events", "run_header"]
