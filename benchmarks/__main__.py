"""``python -m benchmarks``: run the suite (see ``benchmarks/cli.py`` for the options)."""
import sys

from .cli import main

sys.exit(main())
