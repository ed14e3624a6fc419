"""``python -m coadapt.cli ...``: the ``coadapt`` command without the console script."""

import sys

from coadapt.cli import main

sys.exit(main())
