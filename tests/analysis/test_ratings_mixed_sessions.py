"""A BIDS dataset whose session files have different columns: a lab session beside an
imported one (which has no anchor_rating, sketch_file, onset ... columns)."""

import pandas as pd

from sbir_study.analysis import load_ratings


def _session(root, label, table):
    beh = root / f"sub-{label}" / "beh"
    beh.mkdir(parents=True)
    table.to_csv(beh / f"sub-{label}_task-x_beh.tsv", sep="\t", index=False, na_rep="n/a")


def test_a_column_one_session_file_lacks_is_missing_there(tmp_path):
    pairs = {"sketch_id": ["s1", "s1", "a1"], "image_id": ["i1", "i2", "j1"]}
    _session(
        tmp_path,
        "lab",
        pd.DataFrame(
            {
                "participant": "lab",
                "trial": [1, 2, 3],
                "phase": ["main", "main", "anchor_repeat"],
                **pairs,
                "rating": [1, 3, 2],
                "rt": [0.5, 0.6, 0.7],
                "anchor_rating": [None, None, 2],
            }
        ),
    )
    _session(
        tmp_path,
        "old",
        pd.DataFrame(
            {
                "participant": "old",
                "trial": [1, 2],
                "phase": "main",
                "sketch_id": ["s1", "s1"],
                "image_id": ["i1", "i2"],
                "rating": [2, 4],
                "rt": 0.4,
            }
        ),
    )
    ratings = load_ratings(tmp_path)
    # As pandas reads each file on its own: a column the file lacks is missing in its rows.
    expected = pd.concat(
        [pd.read_csv(p, sep="\t", na_values=["n/a"]) for p in sorted(tmp_path.glob("sub-*/beh/*"))],
        ignore_index=True,
    )
    got = ratings.sort_values(["participant", "trial"]).reset_index(drop=True)
    expected = expected.sort_values(["participant", "trial"]).reset_index(drop=True)
    assert got["anchor_rating"].isna().tolist() == expected["anchor_rating"].isna().tolist()
    assert got["rating"].astype(float).tolist() == expected["rating"].astype(float).tolist()
