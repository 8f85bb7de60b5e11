"""Draw a contact sheet of a stimulus set: each sketch beside a few of its images.

Images are ordered from the most to the least similar: by prescribed rating for
anchor sketches, by latent similarity (when the set records it) for the others.
Used for docs/img/stimuli_*.png; useful to look at a set as a participant would.

    python scripts/stimulus_sheet.py SET OUT.png --sketches a01 a02 a03 --images 7
"""

from __future__ import annotations

import argparse
from pathlib import Path

from PIL import Image, ImageDraw

from sbir_study.foundation.checks import open_image
from sbir_study.stimuli import load_set


def contact_sheet(folder: Path, sketch_ids: list[str], images: int, cell: int = 160) -> Image.Image:
    manifest = load_set(folder).manifest
    height = cell * 3 // 4
    sheet = Image.new("RGB", (cell * (images + 1) + 8, (height + 18) * len(sketch_ids)), "white")
    draw = ImageDraw.Draw(sheet)
    for row, sketch_id in enumerate(sketch_ids):
        pairs = manifest[manifest["sketch_id"] == sketch_id]
        if pairs.empty:
            raise SystemExit(f"{folder}: no sketch {sketch_id!r}")
        if (pairs["role"] == "anchor").all():
            pairs = pairs.sort_values("anchor_rating", key=lambda r: r.astype(int))
            labels = [f"rating {r}" for r in pairs["anchor_rating"]]
        else:
            pairs = pairs.sort_values("latent_similarity", key=lambda s: -s.astype(float))
            step = max(1, len(pairs) // images)
            pairs = pairs.iloc[::step][:images]
            labels = [f"s = {float(s):.2f}" for s in pairs["latent_similarity"]]
        top = row * (height + 18)
        files = [pairs["sketch_path"].iloc[0], *pairs["image_path"]]
        for column, relative in enumerate(files):
            with open_image(folder / relative) as image:  # its size checked from the header
                thumb = image.convert("RGB").resize((cell - 4, height - 4))
            left = column * cell + (8 if column else 0)
            sheet.paste(thumb, (left + 2, top + 2))
            label = sketch_id if column == 0 else labels[column - 1]
            draw.text((left + 4, top + height), label, fill="black")
    return sheet


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--sketches", nargs="+", required=True)
    parser.add_argument("--images", type=int, default=7)
    args = parser.parse_args()
    contact_sheet(args.folder, args.sketches, args.images).save(args.out, quality=85)


if __name__ == "__main__":
    main()
