"""The rating study: protocols, trial lists, the lab session and the online session.

Protocols (:mod:`.protocol`; its tables :mod:`.protocol_settings`, its one-line
refusals :mod:`.protocol_errors`, the key names it may use :mod:`.key_names`), trial
lists (:mod:`.trials`, a pure function of protocol, stimulus set and seed), a trial's
record from its key events (:mod:`.responses`), the PsychoPy session (:mod:`.session`)
and its crash-safe recorder (:mod:`.recorder`); the browser session and its server
(:mod:`.online`). PsychoPy is imported only when a window opens, and the
web stack only by :mod:`.online`.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
