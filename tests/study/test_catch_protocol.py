"""[[catch]] in a protocol: checked at load (one line naming catch[i] and the key), and
against the stimulus set before a session or a server starts."""

from __future__ import annotations

import pandas as pd
import pytest

from sbir_study.foundation.checks import InputError
from sbir_study.study.protocol import load_protocol
from sbir_study.study.trials import check_catch_pairs


def _protocol(tmp_path, *tables):
    path = tmp_path / "p.toml"
    path.write_text("".join(f"[[catch]]\n{table}\n" for table in tables))
    return path


def test_catch_pairs_load_with_their_range(tmp_path):
    protocol = load_protocol(
        _protocol(
            tmp_path,
            'sketch_id = "s1"\nimage_id = "s1"\nratings = "1-2"',
            'sketch_id = "s1"\nimage_id = "blank"\nratings = "7"',
        )
    )
    assert [(p.sketch_id, p.image_id, p.lowest, p.highest) for p in protocol.catch] == [
        ("s1", "s1", 1, 2),
        ("s1", "blank", 7, 7),
    ]


@pytest.mark.parametrize(
    "table, message",
    [
        (
            'sketch_id = "s"\nimage_id = "i"\nratings = "0-2"',
            "catch[0].ratings: expected ratings "
            "LOW-HIGH with 1 <= LOW <= HIGH <= 7 (the rating keys), got '0-2'",
        ),
        ('sketch_id = "s"\nimage_id = "i"\nratings = "3-2"', "catch[0].ratings: expected ratings"),
        (
            'sketch_id = "s"\nimage_id = "i"\nratings = "low"',
            "catch[0].ratings: expected the "
            'ratings that pass, as pressed: "LOW-HIGH" or one rating ("1-2", "7"), got \'low\'',
        ),
        (
            'sketch_id = "s"\nratings = "1"',
            "catch[0]: missing key 'image_id'; expected sketch_id, image_id, ratings",
        ),
        (
            'sketch_id = "s"\nimage_id = "i"\nratings = "1"\nrating = 1',
            "catch[0]: unknown key 'rating'",
        ),
        (
            'sketch_id = "s 1"\nimage_id = "i"\nratings = "1"',
            "catch[0].sketch_id: expected a sketch id of the stimulus set",
        ),
    ],
)
def test_a_bad_catch_table_is_one_line_naming_it(tmp_path, table, message):
    path = _protocol(tmp_path, table)
    with pytest.raises(InputError) as error:
        load_protocol(path)
    assert str(error.value).startswith(f"{path}: {message}")
    assert "\n" not in str(error.value)


def test_a_pair_named_twice_is_refused(tmp_path):
    table = 'sketch_id = "s"\nimage_id = "i"\nratings = "1"'
    with pytest.raises(InputError, match=r"catch\[1\]: expected each pair once, got s/i twice"):
        load_protocol(_protocol(tmp_path, table, table))


def test_a_catch_pair_must_be_a_main_pair_of_the_set(tmp_path):
    protocol = load_protocol(_protocol(tmp_path, 'sketch_id = "s"\nimage_id = "i2"\nratings = "1"'))
    manifest = pd.DataFrame(
        {
            "sketch_id": ["s", "s", "a"],
            "image_id": ["i1", "i2", "j"],
            "role": ["main", "main", "anchor"],
        }
    )
    check_catch_pairs(protocol, manifest, "set")
    with pytest.raises(
        InputError,
        match=r"^set: catch\[0\]: the stimulus set has no pair s/i2 "
        "of role main",
    ):
        check_catch_pairs(protocol, manifest.iloc[[0, 2]], "set")
