"""What every part of sbir-study shares; it imports nothing else of the project.

* :mod:`.checks`: input errors (:class:`~.checks.InputError`), the id rule, options,
  images read with their size bounded;
* :mod:`.tables`: the one reader of CSV/TSV tables, with errors that name the line, and
  :mod:`.text`: a text file as it reads it (UTF-8, line ends, lines, SHA-256);
* :mod:`.outputs`: how every command writes its output (the output policy), and
  :mod:`.targets`: which targets it may write;
* :mod:`.atomic`: one file replaced whole or not at all;
* :mod:`.provenance`: software versions and file hashes;
* :mod:`.progress`: progress on a terminal;
* :mod:`.paper`: the paper's design and published values;
* :mod:`.scale`: the rating scale of a study (its points, which end is the best match);
* :mod:`.bids`: reading and writing the BIDS files of a rating dataset;
* :mod:`.trial_order`: the order of a participant's trials;
* :mod:`.html`: the helpers of the self-contained HTML reports;
* :mod:`.memory`: handing freed memory back to the system between large steps;
* :mod:`.environment`: environment variables set for a while, then put back.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
