"""``sbir-study protocol show``: every screen's text, in order, as the participant sees it."""

from pathlib import Path

from tests.helpers import run_main

ROOT = Path(__file__).resolve().parents[2]


def _screens(stdout: str) -> list[tuple[str, str]]:
    """(heading, text) of each numbered screen, in the order printed."""
    found, heading, text = [], None, []
    for line in stdout.splitlines():
        if line[:1].isdigit() and ". " in line:
            if heading is not None:
                found.append((heading, " ".join(text).strip()))
            heading, text = line.split(". ", 1)[1], []
        elif heading is not None and not set(line) <= {"-", "="}:
            text.append(line)
    found.append((heading, " ".join(text).strip()))
    return found


def test_letter_keys_are_shown_as_the_participant_reads_them(tmp_path):
    protocol = tmp_path / "letters.toml"
    protocol.write_text(
        '[response]\nkeys = ["a", "s", "d", "f", "g"]\npause_key = "b"\n'
        '[pauses]\nallowed = false\n[participants]\ndetails = ["sex"]\n'
        '[texts]\nanchor_label = "Score {rating}"\n',
        encoding="utf-8",
    )
    result = run_main("protocol", "show", str(protocol), "--session", "lab")
    assert result.returncode == 0, result.stderr
    shown = _screens(result.stdout)
    assert [heading for heading, _ in shown] == [
        "details: sex",
        "before the anchoring phase",
        "under each anchor pair",
        "before the main block",
        "after the quit key",
        "the end",
    ]
    main = dict(shown)["before the main block"]
    assert "Press one of the keys A, S, D, F, G: A for the best match" in main
    assert "pause" not in main and "number key" not in main
    assert dict(shown)["under each anchor pair"] == "Score 1"
    assert "Online page" not in result.stdout


def test_the_online_page_lists_its_buttons_and_the_shipped_protocols_show(tmp_path):
    result = run_main("protocol", "show", str(ROOT / "protocols" / "eitz2011.toml"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.index("Lab session") < result.stdout.index("Online page")
    online = dict(_screens(result.stdout.split("Online page", 1)[1]))
    assert online["consent"].endswith("[I agree] [I do not agree]")
    assert online["after the last pair"] == "Saving your answers ..."
    for name in ("demo", "pilot", "example_de"):
        shown = run_main("protocol", "show", str(ROOT / "protocols" / f"{name}.toml"))
        assert shown.returncode == 0, shown.stderr


def test_a_bad_protocol_is_one_line(tmp_path):
    protocol = tmp_path / "bad.toml"
    protocol.write_text('[texts]\nagre = "Ja"\n', encoding="utf-8")
    result = run_main("protocol", "show", str(protocol))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"sbir-study: error: {protocol}: unknown key 'texts.agre' (did you mean 'texts.agree'?)"
    )
