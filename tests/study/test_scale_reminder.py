"""The scale's reminder under each rated pair ([display] scale_reminder), in the lab window.

Drawn in PsychoPy under Xvfb by the session's own window (:class:`SessionWindow`) in a
subprocess, as ``sbir-study run`` opens it: the reminder is one of the stimuli a rated
pair's flip draws (practice, main, anchor repeats; not an anchor demonstration, which has
its label), so it comes and goes with the pair in the same flips; its text box lies below
the sketch's and the image's rectangles; and its pixels are lit with the pair and dark on
the blank.
"""

import pytest

from sbir_study.foundation.scale import Scale
from sbir_study.stimuli import SetDesign, generate_set
from sbir_study.study.protocol import load_protocol
from sbir_study.study.screens import scale_reminder, screens
from tests.study.session_harness import draw_in_window

BODY = r"""
from psychopy.tools.monitorunittools import deg2pix

def box(stim):
    # The stimulus's rectangle from its pos and size in degrees, in pixels about the window's
    # centre, y up: (left, right, bottom, top).
    (x, y), (w, h) = (deg2pix(np.asarray(v, dtype=float), win.monitor) for v in (stim.pos,
                                                                               stim.size))
    return [float(x - w / 2), float(x + w / 2), float(y - h / 2), float(y + h / 2)]

trials = build_trials(protocol, stimulus_set.manifest, 1)
out = {"phases": {}, "size": [int(v) for v in win.size]}
for phase in ("practice", "main", "anchor_repeat", "anchor_demo"):
    row = trials.iloc[0].copy()
    row["phase"], row["anchor_rating"] = phase, 1
    stims = window.pair(row)
    entry = {"kinds": [type(s).__name__ for s in stims], "texts": [getattr(s, "text", None)
             for s in stims]}
    if phase != "anchor_demo":
        sketch, image, reminder = stims
        w, h = reminder.boundingBox
        x, top = reminder.posPix
        entry["reminder"] = [float(x - w / 2), float(x + w / 2), float(top - h), float(top)]
        entry["stimuli"] = [box(s) for s in (sketch, image)]
        shown = read_back(lambda: [s.draw() for s in stims])
        blank = read_back(window.black.draw)
        background = np.asarray(read_back(lambda: None)[0, 0])
        # Rows of the frame (top first) inside the reminder's box.
        cy = win.size[1] / 2
        rows = slice(int(cy - top), int(cy - (top - h)))
        cols = slice(int(win.size[0] / 2 + x - w / 2), int(win.size[0] / 2 + x + w / 2))
        region = lambda f: int((np.abs(f[rows, cols] - background).max(axis=2) > 64).sum())
        entry["lit_with_pair"] = region(shown)
        entry["lit_on_blank"] = int((blank[rows, cols].max(axis=2) > 64).sum())
    out["phases"][phase] = entry
win.close()
print(json.dumps(out, default=float))
"""


def _protocol(tmp_path, display="scale_reminder = true\n", texts=""):
    path = tmp_path / "p.toml"
    path.write_text(
        'name = "reminder"\n[response]\nkeys = ["a", "s", "d", "f", "g"]\nbest = "high"\n'
        f"[display]\n{display}[texts]\n{texts}",
        encoding="utf-8",
    )
    return path


def test_the_reminder_is_written_from_the_keys_and_the_scale(tmp_path):
    # The best end high: G (rating 5) is the best match, A (rating 1) the worst.
    protocol = load_protocol(_protocol(tmp_path))
    assert scale_reminder(protocol) == "G = best match ... A = worst match"
    own = load_protocol(
        _protocol(
            tmp_path,
            texts='scale_reminder = "{worst_key} ({worst_rating}) schlecht ... '
            '{best_key} ({best_rating}) gut"\n',
        )
    )
    assert scale_reminder(own) == "A (1) schlecht ... G (5) gut"
    listed = [s for s in screens(protocol, "lab") if "best match ..." in s.text]
    assert [s.when for s in listed] == ["under each pair of the main block"]
    off = load_protocol(_protocol(tmp_path, display=""))
    assert not [s for s in screens(off, "lab") if "best match ..." in s.text]
    assert not [s for s in screens(protocol, "online") if "best match ..." in s.text]


def test_protocol_show_lists_the_reminder_where_the_participant_meets_it(tmp_path):
    from tests.helpers import run_main

    path = _protocol(tmp_path)
    with path.open("a", encoding="utf-8") as file:
        file.write('[practice]\npairs = [["s01", "s01_i00"]]\n')
    result = run_main("protocol", "show", str(path), "--session", "lab")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    headings = [line.split(". ", 1)[1] for line in lines if line[:1].isdigit() and ". " in line]
    assert headings.index("under each practice pair") == (
        headings.index("before the practice pairs") + 1
    )
    assert headings.index("under each pair of the main block") == (
        headings.index("before the main block") + 1
    )
    assert lines.count("G = best match ... A = worst match") == 2


def test_a_placeholder_the_reminder_does_not_take_is_refused(tmp_path):
    from sbir_study.foundation.checks import InputError

    with pytest.raises(InputError, match="scale_reminder"):
        load_protocol(_protocol(tmp_path, texts='scale_reminder = "{rating}"\n'))


def _overlaps(a, b):
    return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]


@pytest.mark.realtime
def test_the_reminder_is_drawn_under_each_rated_pair_and_with_it_only(tmp_path):
    # Taller than wide, so that the reminder must clear the height, not the width.
    stimuli = generate_set(
        tmp_path / "set",
        SetDesign(
            sketches=2, images_per_sketch=3, anchor_sketches=1, anchor_images=5, width=72, height=96
        ),
        seed=5,
        scale=Scale(1, 5, "high"),
    )
    # 8 degrees wide, so that the pair and the reminder fit the 800 pixels of a windowed session.
    protocol_file = _protocol(tmp_path, display="scale_reminder = true\nstimulus_deg = 8.0\n")
    drawn = draw_in_window(tmp_path, BODY, protocol_file, stimuli)
    phases = drawn["phases"]
    assert phases["anchor_demo"]["kinds"] == ["ImageStim", "ImageStim", "TextStim"]
    assert phases["anchor_demo"]["texts"][2] == "Rating: 1"
    for phase in ("practice", "main", "anchor_repeat"):
        entry = phases[phase]
        assert entry["kinds"] == ["ImageStim", "ImageStim", "TextStim"], phase
        assert entry["texts"][2] == "G = best match ... A = worst match", phase
        left, right, bottom, top = entry["reminder"]
        assert right - left > 100 and top - bottom > 10, entry["reminder"]
        for stimulus in entry["stimuli"]:
            assert not _overlaps(entry["reminder"], stimulus), (phase, entry)
            assert top < stimulus[2], (phase, entry)  # below, not beside
        half_w, half_h = drawn["size"][0] / 2, drawn["size"][1] / 2
        assert -half_w <= left and right <= half_w and -half_h <= bottom, entry["reminder"]
        assert entry["lit_with_pair"] > 200, entry
        assert entry["lit_on_blank"] == 0, entry
