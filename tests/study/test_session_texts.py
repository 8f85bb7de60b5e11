"""The protocol's words in the lab window: the German example drawn in PsychoPy under Xvfb.

The window is the session's own (:class:`SessionWindow`), opened in a subprocess on a
private Xvfb display as ``sbir-study run`` opens it; each waiting screen, a details
question and an anchor pair's label are drawn, read back and flipped. A text is drawn
when its pixels stand out from the background; an umlaut or ß is drawn as itself when
its pixels differ from those of the letter without its marks (a missing glyph would
draw nothing, or the same box for each).
"""

import pytest

from sbir_study.stimuli import SetDesign, generate_set
from tests.study.session_harness import ROOT, draw_in_window

BODY = r"""
from sbir_study.study.texts import fill

def ink(frame):
    # Pixels away from the background (the median colour of the frame): the text's.
    background = np.median(frame.reshape(-1, 3), axis=0)
    return int((np.abs(frame - background).max(axis=2) > 64).sum())

def letters(text):
    stim = visual.TextStim(win, text=text, height=2.0, color="white")
    return read_back(stim.draw)

out = {"screens": {}, "lit": {}, "glyphs": {}}
for kind, stim in window.screens.items():
    out["screens"][kind] = stim.text
    out["lit"][kind] = ink(read_back(stim.draw))
window.message(fill(protocol.texts.sex_question))  # as the details form shows it
out["screens"]["sex_question"] = window.text.text
out["lit"]["sex_question"] = ink(read_back(window.text.draw))
trials = build_trials(protocol, stimulus_set.manifest, 1)
row = trials[trials["phase"] == "anchor_demo"].iloc[0]
out["label"] = window.pair(row)[2].text
for marked, plain in (("ä", "a"), ("ö", "o"), ("ü", "u"), ("Ä", "A"), ("ß", "B"), ("ß", "s")):
    a, b = letters(marked), letters(plain)
    out["glyphs"][marked + plain] = [ink(a), int((np.abs(a - b).max(axis=2) > 64).sum())]
win.close()
print(json.dumps(out, ensure_ascii=False))
"""


@pytest.mark.realtime
def test_the_german_example_is_what_the_lab_window_draws(tmp_path):
    from sbir_study.study.protocol import load_protocol
    from sbir_study.study.session.window import screen_texts

    stimuli = generate_set(
        tmp_path / "set",
        SetDesign(sketches=2, images_per_sketch=3, anchor_sketches=1, width=96, height=72),
        seed=5,
    )
    protocol_file = ROOT / "protocols" / "example_de.toml"
    drawn = draw_in_window(tmp_path, BODY, protocol_file, stimuli)
    protocol = load_protocol(protocol_file)
    expected = screen_texts(protocol)
    assert {k: v for k, v in drawn["screens"].items() if k in expected} == expected
    assert "Sitzung jetzt beenden" in drawn["screens"]["quit"]
    assert "schließen" in drawn["screens"]["end"] and "Drücken" in drawn["screens"]["main"]
    assert drawn["screens"]["sex_question"] == protocol.texts.sex_question
    assert drawn["label"] == "Bewertung: 1"
    for kind, pixels in drawn["lit"].items():
        assert pixels > 500, (kind, pixels)
    for pair, (pixels, differing) in drawn["glyphs"].items():
        assert pixels > 200 and differing > 50, (pair, pixels, differing)
