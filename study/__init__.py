"""The rating session and the ``sbir-study`` command line.

The PsychoPy experiment (protocols, trial lists, the session loop and its
crash-safe recorder) lives here; PsychoPy is imported only by the modules that
open a window, so the command line and the analysis start without it.
"""

__all__: list[str] = []
