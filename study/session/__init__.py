"""The rating session of the paper's Sec. 2.3, in a PsychoPy window.

:func:`run_from_files` is ``sbir-study run``; :func:`run_session` runs one
participant's session from a loaded protocol and stimulus set, in the stages of
:mod:`.procedure`, one module each. PsychoPy is imported only when a session runs.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
