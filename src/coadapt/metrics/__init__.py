"""Metrics computed from an event log alone (same code for sim and live)."""

from coadapt.metrics.compute import job_table, summarize, timeline

__all__ = ["job_table", "summarize", "timeline"]
