"""The engine's job backends: ``modeled`` (jobs advance by their profiles on
SimPy timers) and ``live`` (real process groups on the wall clock, emulated
nodes). The two are independent of each other (an import-linter contract)."""
