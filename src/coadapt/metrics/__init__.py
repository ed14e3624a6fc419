"""Metrics computed from an event log alone (same code for sim and live)."""

from coadapt.metrics.compute import job_table, summarize, timeline
from coadapt.metrics.tally import Tally, tally_log

__all__ = ["Tally", "job_table", "summarize", "tally_log", "timeline"]
