"""``python -m coadapt.jobs run|verify|list ...``: the job commands without the
top-level CLI (same arguments as ``coadapt job ...``)."""

from __future__ import annotations

import argparse
import logging
import sys

from coadapt.jobs.commands import register


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    parser = argparse.ArgumentParser(prog="coadapt")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    args = parser.parse_args(["job", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
