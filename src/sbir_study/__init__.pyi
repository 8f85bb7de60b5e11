from . import (
    analysis as analysis,
    cli as cli,
    foundation as foundation,
    stimuli as stimuli,
    study as study,
)

__version__: str
