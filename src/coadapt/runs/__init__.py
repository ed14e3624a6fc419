"""What a run of the engine is set up from: the command-line options every
command that runs the engine shares, resolved into ``RunSettings``."""
