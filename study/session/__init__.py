"""The rating session of the paper's Sec. 2.3, in a PsychoPy window.

:func:`run_from_files` is ``sbir-study run``; :func:`run_session` runs one
participant's session from a loaded protocol and stimulus set. The session
reads as its stages (:mod:`.procedure`), one module each: design
(:mod:`.plan`, with :mod:`.lists`), initialise (:mod:`.keyboard`, :mod:`.window`,
:mod:`.forms`), run (:mod:`.loop`), end (:mod:`.record`); the simulated participant of
``--simulate`` is :mod:`.simulated`. PsychoPy is imported only when a session
runs.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=[
        "forms",
        "keyboard",
        "lists",
        "loop",
        "plan",
        "procedure",
        "record",
        "simulated",
        "window",
    ],
    submod_attrs={
        "procedure": ["SessionOptions", "SessionOutcome", "run_from_files", "run_session"]
    },
)
