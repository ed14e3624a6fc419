"""The scheduling study: a grid of simulated cells run in parallel, its tidy table, statistics and report."""
