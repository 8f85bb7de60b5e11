"""The browser session: the same protocol, trial list and BIDS data as the lab, run online.

``sbir-study serve`` (:func:`serve`) serves a jsPsych experiment (``web/``)
whose one custom plugin shows each sketch/image pair for ``stimulus_s`` and
black for ``blank_s``, frame-timed with ``requestAnimationFrame``, and
records every key-down; the server scores each trial with the lab session's
rule (:mod:`sbir_study.study.responses`) and stores it once in SQLite or PostgreSQL
(:mod:`.storage`). ``sbir-study export-online`` (:func:`export_online`)
writes the BIDS dataset that ``sbir-study analyze`` reads.

Modules: :mod:`.assignment` (which pairs a participant rates),
:mod:`.browser_keys` (browser key names), :mod:`.service` (the operations and their
transactions), :mod:`.scoring` (a browser's report -> a trial record),
:mod:`.status` (the experimenter's view and page) with :mod:`.metrics` (the
live load), :mod:`.storage` (database
and migrations) with :mod:`.queries` (its SQL statements), :mod:`.app` (HTTP:
the app assembled from :mod:`.page_routes`, :mod:`.participant_routes` and
:mod:`.admin_routes`, who may call them in :mod:`.deps`), :mod:`.export`
(BIDS) with :mod:`.publish` (keyed labels in place of the platform's ids),
:mod:`.server` (``serve``). Nothing here imports PsychoPy.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
