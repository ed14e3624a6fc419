"""Console helpers for long work (progress bars, durations); no other coadapt import."""
