"""The one event log shared by simulation, live runs and job workers."""

from coadapt.eventlog.log import (
    LOG,
    LOG_GZ,
    SCHEMA_VERSION,
    EventLog,
    checked_run,
    log_in,
    logs_below,
    read_events,
    run_header,
)

__all__ = ["LOG", "LOG_GZ", "SCHEMA_VERSION", "EventLog", "checked_run", "log_in", "logs_below",
           "read_events",
           "run_header"]
