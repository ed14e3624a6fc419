"""Small helpers every layer may use (atomic files, the CLI's error type)."""
