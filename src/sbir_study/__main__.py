"""``python -m sbir_study``: the ``sbir-study`` command line."""

import sys

from sbir_study.cli import main

sys.exit(main())
