"""``python -m study.cli``: the same as the ``sbir-study`` command."""

import sys

from . import main

sys.exit(main())
