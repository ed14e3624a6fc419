"""Human-facing output: tables, progress bars and plots."""
