"""The rating session of the paper's Sec. 2.3, in a PsychoPy window.

:func:`run_from_files` is ``sbir-study run``; :func:`run_session` runs one
participant's session from a loaded protocol and stimulus set, in the stages of
:mod:`.procedure`, one module each. PsychoPy is imported only when a session runs.
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
