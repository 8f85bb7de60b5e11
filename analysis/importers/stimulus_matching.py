"""The pair a jsPsych trial's stimulus shows, found through a stimulus set's manifest.

A stimulus names files (:func:`stimulus_paths`: every ``src`` of its HTML, or the path
of an image); a path names a file of the set when the shorter of the two is the end of
the longer, folder by folder (:class:`StimulusMatcher`).
"""

from __future__ import annotations

import urllib.parse
from html.parser import HTMLParser

import pandas as pd

from sbir_study.foundation.checks import InputError

__all__ = ["StimulusMatcher", "stimulus_paths"]


class _Sources(HTMLParser):
    """Every ``src`` of an HTML fragment, its character references resolved."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.sources += [value for name, value in attrs if name == "src" and value]


def stimulus_paths(stimulus: str, *, html: bool = True) -> list[str]:
    """The files a jsPsych stimulus names: every ``src`` of its HTML, or the path itself.

    An ``html-keyboard-response`` trial's stimulus is HTML, whose ``<img src="...">``
    (any element's ``src``) name the files, and a text without them none; an
    ``image-keyboard-response`` trial's (``html=False``) is the path of its image.

    Examples
    --------
    >>> stimulus_paths('<img src="sk/cat.png"><img src=\\'img/cat/a&amp;b.jpg\\'>')
    ['sk/cat.png', 'img/cat/a&b.jpg']
    >>> stimulus_paths("<p>Press a key</p>"), stimulus_paths("img/a.jpg", html=False)
    ([], ['img/a.jpg'])
    """
    text = stimulus.strip()
    if not html:
        return [text] if text else []
    parser = _Sources()
    parser.feed(text)
    parser.close()
    return parser.sources


def _path_parts(path: str) -> tuple[str, ...]:
    """A path or URL as its folder and file names (query, fragment and ``./`` dropped)."""
    parsed = urllib.parse.urlsplit(path.strip().replace("\\", "/"))
    if parsed.scheme in ("data", "blob"):
        return ()
    names = urllib.parse.unquote(parsed.path).split("/")
    return tuple(name for name in names if name not in ("", "."))


def _same_file(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether two paths may name one file: the shorter is the end of the longer."""
    n = min(len(a), len(b))
    return n > 0 and a[-n:] == b[-n:]


class StimulusMatcher:
    """The pair a trial's stimulus shows, found through a stimulus set's manifest.

    ``manifest`` has the columns ``sketch_id``, ``image_id``, ``sketch_path`` and
    ``image_path`` (and ``anchor_rating`` for anchor pairs); each stimulus's answer
    is kept, as a file's trials show the same stimuli again and again.
    """

    def __init__(self, manifest: pd.DataFrame) -> None:
        missing = [
            c for c in ("sketch_id", "image_id", "sketch_path", "image_path") if c not in manifest
        ]
        if missing:
            raise InputError(
                f"manifest: no column {missing[0]!r}; expected a stimulus set's "
                "manifest (sketch_id, image_id, sketch_path, image_path)"
            )
        self.manifest = manifest.reset_index(drop=True)
        # Each file of the set under its file name: (its parts, "sketch" or "image", its path).
        self.files: dict[str, list[tuple[tuple[str, ...], str, str]]] = {}
        for kind in ("sketch", "image"):
            for path in pd.unique(self.manifest[f"{kind}_path"].astype(str)):
                parts = _path_parts(path)
                if parts:
                    self.files.setdefault(parts[-1], []).append((parts, kind, path))
        self.cache: dict[tuple[str, bool], tuple[str, str] | str] = {}

    def names_a_file(self, stimulus: str, html: bool) -> bool:
        """Whether the stimulus names any file (a text screen names none)."""
        return any(_path_parts(path) for path in stimulus_paths(stimulus, html=html))

    def pair(self, stimulus: str, html: bool) -> tuple[str, str] | str:
        """``(sketch_id, image_id)``, or why the stimulus names no one pair of the set."""
        if (stimulus, html) not in self.cache:
            self.cache[stimulus, html] = self._pair(stimulus, html)
        return self.cache[stimulus, html]

    def _pair(self, stimulus: str, html: bool) -> tuple[str, str] | str:
        sketches: set[str] = set()
        images: set[str] = set()
        paths = stimulus_paths(stimulus, html=html)
        if not paths:
            return "it names no file"
        for path in paths:
            parts = _path_parts(path)
            found = [
                f for f in self.files.get(parts[-1] if parts else "", []) if _same_file(parts, f[0])
            ]
            if len({f[2] for f in found}) > 1:
                named = " and ".join(sorted({f"{f[1]} {f[2]!r}" for f in found}))
                return f"its file {path!r} could be the set's {named}; name the pair with --columns"
            for _, kind, listed in found:
                (sketches if kind == "sketch" else images).add(listed)
        rows = self.manifest[self.manifest["image_path"].astype(str).isin(images)]
        if sketches:
            rows = rows[rows["sketch_path"].astype(str).isin(sketches)]
        pairs = list(dict.fromkeys(zip(rows["sketch_id"], rows["image_id"], strict=True)))
        if len(pairs) == 1:
            return pairs[0]
        if not images:
            return "its files are no image of the stimulus set"
        if not pairs:
            return "its sketch and image are no pair of the stimulus set"
        return (
            f"its image is in {len(pairs)} pairs of the set ({pairs[0][0]}, {pairs[1][0]}"
            f"{', ...' if len(pairs) > 2 else ''}) and no sketch of the set is shown "
            "with it; name the pair with --columns"
        )
