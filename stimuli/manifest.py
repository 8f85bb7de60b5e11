"""Reading a stimulus set's ``manifest.csv``.

A set is a folder with the image files and ``manifest.csv``: one row per pair
with ``sketch_id, image_id, sketch_path, image_path, role`` (paths relative to
the folder). This module reads what the analysis needs from it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis._checks import InputError

__all__ = ["MANIFEST", "MANIFEST_COLUMNS", "read_manifest", "sketch_image_paths"]

MANIFEST = "manifest.csv"
MANIFEST_COLUMNS = ("sketch_id", "image_id", "sketch_path", "image_path", "role")


def read_manifest(folder: str | Path) -> pd.DataFrame:
    """The manifest of the set in ``folder``, every cell as text.

    Raises :class:`~analysis._checks.InputError` (exit 2 on the command line)
    when the file is missing or unreadable, or lacks a required column.
    """
    path = Path(folder) / MANIFEST
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; expected the stimulus set's manifest") from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError) as error:
        raise InputError(f"{path}: cannot be read as a CSV table ({error})") from None
    missing = [c for c in MANIFEST_COLUMNS if c not in table.columns]
    if missing:
        raise InputError(
            f"{path}: line 1: missing column {missing[0]!r}; expected {', '.join(MANIFEST_COLUMNS)}"
        )
    return table


def sketch_image_paths(folder: str | Path) -> dict[str, Path]:
    """Each sketch id of the set mapped to its image file (inside ``folder``)."""
    folder = Path(folder)
    table = read_manifest(folder).drop_duplicates("sketch_id")
    return {row.sketch_id: folder / row.sketch_path for row in table.itertuples()}
