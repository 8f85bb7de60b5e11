"""Stimulus sets of sketch/image pairs: manifest, integrity, generation and pilot-based selection.

The set format and the ``sbir-study stimuli`` subcommands are specified in the
project's design notes; this package grows with them.
"""

__all__: list[str] = []
