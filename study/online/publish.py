"""What a dataset made to be shared holds in place of the crowd platform's ids.

An online session is stored under a label made of the id the platform sent
(:func:`sbir_study.foundation.checks.participant_label`: a Prolific id is its own
label), so that the status page and ``admin/participants.csv`` name participants
as the platform does. A dataset that leaves the lab must not: ``export-online``
gives each participant a keyed label instead (:func:`keyed_labels`, an HMAC-SHA256
of the platform's id with a key kept in the data folder, :func:`label_key`), the
same at every export with that key and of no use to anyone without it, and writes
the link from label to platform ids into a file beside the dataset
(:func:`linkage_path`), never inside it, for paying participants.

The stored label is left as it is: it is the server's name of the session (the status
page, the list choice made under a lock, every server of a study sharing one database),
a database recorded before keeps its labels, and nothing recorded is rewritten.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string
from collections.abc import Iterable
from pathlib import Path

import sqlalchemy as sa

from sbir_study.foundation.checks import InputError

from .secret_files import secret_text

__all__ = [
    "LABEL_DIGITS",
    "LABEL_KEY_FILE",
    "PLATFORM_PARAMETERS",
    "default_label_key",
    "keyed_labels",
    "label_key",
    "linkage_path",
]

#: The key's file in the data folder (``serve --data``), beside the SQLite database.
LABEL_KEY_FILE = "label-key"
#: The hex digits of a keyed label: 48 bits, short enough to read; more where two ids share them.
LABEL_DIGITS = 12
#: The address parameters of a crowd platform that the session keeps (Prolific's).
PLATFORM_PARAMETERS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
#: The fewest hex digits of a key: 128 bits.
_MIN_KEY_DIGITS = 32


def default_label_key(url: str | sa.URL) -> Path:
    """The key's file for the database at ``url``: ``label-key`` beside a SQLite file, where
    ``serve --data`` keeps its database and admin token; another database has no folder and
    needs ``--label-key``."""
    address = sa.engine.make_url(url)
    if address.get_backend_name() != "sqlite" or not address.database:
        raise InputError(
            f"--label-key: expected the file of the labels' key for {address.render_as_string()} "
            f"(a SQLite database keeps it beside itself, DATA/{LABEL_KEY_FILE})"
        )
    return Path(address.database).parent / LABEL_KEY_FILE


def label_key(path: Path) -> bytes:
    """The labels' key in ``path``, made (256 random bits, mode 0600) when there is none.

    An existing file must hold at least 32 hex digits (128 bits, ``openssl rand -hex 32``
    writes 64) and be readable by its owner alone, as the admin token's is: anyone with
    the key and a platform id can tell that id's label.
    """
    text = secret_text(path, new=lambda: secrets.token_hex(32))
    if len(text) < _MIN_KEY_DIGITS or any(c not in string.hexdigits for c in text):
        raise InputError(
            f"{path}: expected a key of at least {_MIN_KEY_DIGITS} hex digits (openssl rand "
            f"-hex 32), got {len(text)} characters"
        )
    return text.encode("ascii")


def keyed_labels(
    key: bytes, source_ids: Iterable[str], *, digits: int = LABEL_DIGITS
) -> dict[str, str]:
    """Each platform id's label: the first ``digits`` hex digits of its HMAC-SHA256 under
    ``key``, 4 more at a time where an id before it has those.

    ``source_ids`` come in the order their sessions started, so that a later id never
    takes an earlier one's label: an id keeps its label at every export with the same key.

    Examples
    --------
    The key as :func:`label_key` reads it (``openssl dgst -sha256 -hmac KEY`` gives the same):

    >>> keyed_labels(b"0123456789abcdef" * 2, ["5f8d0e2a9b1c3d4e5f6a7b8c", "R_3kVq9x"])
    {'5f8d0e2a9b1c3d4e5f6a7b8c': '6f7d67d0f624', 'R_3kVq9x': 'd2a86e8f3ddc'}
    """
    labels: dict[str, str] = {}
    taken: set[str] = set()
    for source_id in source_ids:
        digest = hmac.new(key, source_id.encode("utf-8"), hashlib.sha256).hexdigest()
        label = next(
            (digest[:n] for n in range(digits, len(digest) + 1, 4) if digest[:n] not in taken),
            None,
        )
        if label is None:  # the whole digest taken: the same id given twice
            raise ValueError(f"the id {source_id!r} is given twice")
        labels[source_id] = label
        taken.add(label)
    return labels


def linkage_path(out: Path) -> Path:
    """The file beside the dataset ``out`` that links its labels to the platform's ids:
    ``<out>.linkage.tsv``."""
    return out.with_name(f"{out.name}.linkage.tsv")
