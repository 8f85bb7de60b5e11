"""The browser session: the same protocol, trial list and BIDS data as the lab, run online.

``sbir-study serve`` (:func:`serve`) serves a jsPsych experiment (``web/``)
whose one custom plugin shows each sketch/image pair for ``stimulus_s`` and
black for ``blank_s``, frame-timed with ``requestAnimationFrame``, and
records every key-down; the server scores each trial with the lab session's
rule (:mod:`study.responses`) and stores it once in SQLite or PostgreSQL
(:mod:`.storage`). ``sbir-study export-online`` (:func:`export_online`)
writes the BIDS dataset that ``sbir-study analyze`` reads.

Modules: :mod:`.assignment` (which pairs a participant rates),
:mod:`.keys` (browser key names), :mod:`.service` (the operations),
:mod:`.app` (HTTP), :mod:`.storage` (database and migrations),
:mod:`.export` (BIDS), :mod:`.status` (the experimenter's page),
:mod:`.server` (``serve``).
"""

from .assignment import choose_list, list_manifest, split_lists
from .keys import BROWSER_CODES, browser_key_name

__all__ = [
    "BROWSER_CODES",
    "browser_key_name",
    "choose_list",
    "export_online",
    "list_manifest",
    "serve",
    "split_lists",
]


def serve(*args, **kwargs):
    """Run ``sbir-study serve`` (see :func:`study.online.server.serve`)."""
    from .server import serve as _serve

    return _serve(*args, **kwargs)


def export_online(*args, **kwargs):
    """Run ``sbir-study export-online`` (see :func:`study.online.export.export_online`)."""
    from .export import export_online as _export

    return _export(*args, **kwargs)
