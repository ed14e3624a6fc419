"""The one way a command reports bad input: a line on stderr and an exit status."""

from __future__ import annotations

import sys


def fail(command: str, message: str, code: int = 2) -> int:
    """Write ``coadapt COMMAND: error: MESSAGE`` to stderr and return ``code``
    (2, as argparse uses for bad usage), for the command to return as its status."""
    sys.stderr.write(f"coadapt {command}: error: {message}\n")
    return code
