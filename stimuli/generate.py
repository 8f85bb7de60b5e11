"""A procedural stimulus set with known similarity, for demos, tests and pilots.

A sketch is one to three simple objects (a house, a tree, a boat, ...) and, for half of the
sketches, a horizon, in black outlines with a hand-drawn wobble. An image is a colour
rendering of the sketch's scene after changes that grow with the dissimilarity d = 1 - s:

* the scene shifted by up to 22% of the frame, scaled by up to exp(+-0.35) and rotated by
  up to 30 degrees (each proportional to d, direction random); each object moved and
  resized a little more (sd 5% of the frame and 15%);
* each object missing with probability 0.6 d^2 (never every object), each further part of
  one (a door, a sail) with probability 0.3 d;
* each remaining object replaced by another kind, elsewhere, with probability 1.6 d - 0.6;
* about 6 d^1.2 unrelated objects added as clutter.

The manifest records s (``latent_similarity``, 1 = the sketch's own scene) and the changes
(``changes``); :func:`latent_rating` maps s to 1..7. Main pairs have s stratified over
(0, 1]; a pilot pool's candidates s = U^a, a ~ U(1, 4) per sketch (mostly poor matches, as
the paper's pool); anchor images s = 1 - (r' - low) / (high - low) for their prescribed
rating r' in the paper's orientation. Pillow draws at twice the size and reduces by 2 x 2
averaging; one :class:`numpy.random.SeedSequence` gives a child per sketch and image, so the
same seed gives the same bytes and sketch k does not depend on how many are generated.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
from PIL import Image, ImageDraw

from sbir_study.foundation import paper
from sbir_study.foundation.checks import InputError, check_option
from sbir_study.foundation.progress import counter
from sbir_study.foundation.scale import PAPER_SCALE, Scale

from .manifest import GENERATOR_FILE, write_checksums, write_manifest

__all__ = ["GENERATOR_FILE", "SetDesign", "generate_set", "latent_rating"]

_SUPERSAMPLE = 2


@dataclass(frozen=True)
class SetDesign(paper.PairDesign):
    """Size of a generated set: the pairs (the paper's by default) and the images' pixels."""

    width: int = 320
    height: int = 240
    #: ``main`` for a study set; ``candidate`` for a pilot pool, skewed towards poor matches
    #: (as a retrieval system's top results are).
    role: str = "main"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_option("role", self.role, ("main", "candidate"))
        for name, low, high in (("width", 64, 4096), ("height", 64, 4096)):
            value = getattr(self, name)
            if not isinstance(value, int) or not low <= value <= high:
                raise InputError(f"{name}: expected a whole number {low}..{high}, got {value!r}")


def latent_rating(similarity: npt.ArrayLike) -> np.ndarray | float:
    """The rating a participant without noise gives a pair of latent similarity s: 7 - 6 s.

    >>> latent_rating([1.0, 0.5, 0.0]).tolist()
    [1.0, 4.0, 7.0]
    """
    return 7.0 - 6.0 * np.asarray(similarity, dtype=float)[()]


def generate_set(
    folder: str | Path,
    design: SetDesign = SetDesign(),
    seed: int = 0,
    *,
    progress: bool | None = False,
    version: str = "",
    overwrite: bool = False,
    scale: Scale = PAPER_SCALE,
) -> Path:
    """Draw a stimulus set into ``folder``, written as every output is (``docs/outputs.md``).

    Writes ``sketches/<sketch_id>.png``, ``images/<sketch_id>/<image_id>.jpg``, ``manifest.csv``
    (with ``latent_similarity`` and ``changes``), ``generator.json`` (the design, the seed and
    a scale other than the paper's as ``AnchorScale``) and ``SHA256SUMS``. The anchor images'
    prescribed ratings are spread over ``scale``, at most one per point. Returns the folder.
    """
    from sbir_study.foundation.outputs import output_folder

    if scale.low != 1:  # a set's prescribed ratings are points of 1..9
        raise InputError(
            f"scale: expected a scale from 1 for a set's anchors (1-5, "
            f"1-9:high-is-best), got {scale}"
        )
    if design.anchor_sketches and design.anchor_images > scale.k:
        raise InputError(
            f"anchor_images: expected at most one per point of the scale {scale} "
            f"({scale.k}), got {design.anchor_images}"
        )
    with output_folder(folder, "stimuli generate", overwrite=overwrite) as staging:
        _draw_set(staging, design, seed, progress=progress, version=version, scale=scale)
    return Path(folder)


def _draw_set(
    folder: Path, design: SetDesign, seed: int, *, progress: bool | None, version: str, scale: Scale
) -> None:
    root = np.random.SeedSequence(seed)
    anchor_root, main_root = root.spawn(2)
    plans = [
        (f"a{k + 1:02d}", "anchor", stream)
        for k, stream in enumerate(anchor_root.spawn(design.anchor_sketches))
    ] + [
        (f"s{k + 1:02d}", design.role, stream)
        for k, stream in enumerate(main_root.spawn(design.sketches))
    ]
    (folder / "sketches").mkdir(parents=True, exist_ok=True)
    rows = []
    total = design.anchor_sketches * design.anchor_images + design.sketches * (
        design.images_per_sketch
    )
    done = 0
    report = counter("drawing pairs", show=progress)
    noise = _SensorNoise(design)
    for sketch_id, role, stream in plans:
        rows.extend(_draw_sketch(folder, sketch_id, role, stream, design, scale, noise))
        done += design.anchor_images if role == "anchor" else design.images_per_sketch
        report(done, total)
    manifest = pd.DataFrame(
        rows,
        columns=[
            "sketch_id",
            "image_id",
            "sketch_path",
            "image_path",
            "role",
            "anchor_rating",
            "latent_similarity",
            "changes",
        ],
    )
    manifest["anchor_rating"] = manifest["anchor_rating"].astype("Int64")
    write_manifest(folder, manifest)
    about = {
        "GeneratedBy": f"sbir-study stimuli generate {version}".strip(),
        "Seed": seed,
        "Design": asdict(design),
        "LatentSimilarity": "1 = the sketch's own scene, 0 = unrelated; rating 7 - 6 s",
    }
    if scale != PAPER_SCALE:  # a set on the paper's scale records no AnchorScale
        about["AnchorScale"] = str(scale)
    (folder / GENERATOR_FILE).write_bytes((json.dumps(about, indent=2) + "\n").encode("utf-8"))
    files = [
        *manifest["sketch_path"].unique(),
        *manifest["image_path"],
        "manifest.csv",
        GENERATOR_FILE,
    ]
    write_checksums(folder, files)


def _draw_sketch(
    folder: Path,
    sketch_id: str,
    role: str,
    stream: np.random.SeedSequence,
    design: SetDesign,
    scale: Scale,
    noise: _SensorNoise,
) -> list[tuple]:
    n = design.anchor_images if role == "anchor" else design.images_per_sketch
    sketch_stream, *image_streams = stream.spawn(1 + n)
    rng = np.random.default_rng(sketch_stream)
    scene = _compose(rng)
    sketch_path = f"sketches/{sketch_id}.png"
    _save(_render_sketch(scene, design, rng), folder / sketch_path)

    prescribed: list = [pd.NA] * n
    if role == "anchor":
        ratings = np.rint(np.linspace(scale.low, scale.high, n)).astype(int)
        prescribed = ratings.tolist()
        similarity = 1.0 - (scale.oriented(ratings) - scale.low) / (scale.high - scale.low)
    elif role == "candidate":
        # s = U^a with a ~ U(1, 4): mean 1 / (a + 1), from 0.5 down to 0.2.
        similarity = rng.random(n) ** rng.uniform(1.0, 4.0)
    else:
        similarity = 1.0 - (rng.permutation(n) + rng.random(n)) / n
    digits = max(2, len(str(n)))
    (folder / "images" / sketch_id).mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n):
        image_id = f"{sketch_id}_i{i + 1:0{digits}d}"
        image_path = f"images/{sketch_id}/{image_id}.jpg"
        image_rng = np.random.default_rng(image_streams[i])
        changed, changes = _change(scene, 1.0 - float(similarity[i]), image_rng)
        _save(_render_image(changed, design, image_rng, noise), folder / image_path)
        rows.append(
            (
                sketch_id,
                image_id,
                sketch_path,
                image_path,
                role,
                prescribed[i],
                round(float(similarity[i]), 4),
                changes,
            )
        )
    return rows


def _save(image: Image.Image, path: Path) -> None:
    # No metadata and fixed encoder settings: the same pixels give the same bytes.
    if path.suffix == ".jpg":
        image.save(path, format="JPEG", quality=90, optimize=False)
    else:
        image.save(path, format="PNG", optimize=False, compress_level=6)


# --- Scenes ----------------------------------------------------------------------------------
# A scene is a list of objects; an object is a kind, a centre (x, y in units of the frame: 0..1),
# a size (in units of the frame height) and an angle. Each kind is drawn from pieces: polygons
# in a local frame (unit box centred at 0, y down), closed or open, with a colour role.


@dataclass(frozen=True)
class _Object:
    kind: str
    x: float
    y: float
    size: float
    angle: float
    hue: float
    dropped: tuple[int, ...] = ()  # indices of pieces left out ("parts missing")


def _circle(cx: float, cy: float, rx: float, ry: float | None = None, n: int = 40) -> np.ndarray:
    t = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    return np.column_stack([cx + rx * np.cos(t), cy + (ry or rx) * np.sin(t)])


def _poly(*points: tuple[float, float]) -> np.ndarray:
    return np.array(points, dtype=float)


def _star() -> np.ndarray:
    t = np.arange(10) * np.pi / 5 - np.pi / 2
    r = np.where(np.arange(10) % 2 == 0, 0.5, 0.2)
    return np.column_stack([r * np.cos(t), r * np.sin(t)])


# Each piece: (points, closed, colour role); roles index a kind's palette.
_PIECES: dict[str, list[tuple[np.ndarray, bool, int]]] = {
    "house": [
        (_poly((-0.38, -0.05), (0.38, -0.05), (0.38, 0.5), (-0.38, 0.5)), True, 0),
        (_poly((-0.5, -0.05), (0.0, -0.5), (0.5, -0.05)), True, 1),
        (_poly((-0.08, 0.2), (0.08, 0.2), (0.08, 0.5), (-0.08, 0.5)), True, 2),
    ],
    "tree": [
        (_poly((-0.08, 0.12), (0.08, 0.12), (0.08, 0.5), (-0.08, 0.5)), True, 1),
        (_circle(0.0, -0.12, 0.38, 0.34), True, 0),
    ],
    "sun": [(_circle(0.0, 0.0, 0.3), True, 0)]
    + [
        (
            _poly((0.38 * math.cos(a), 0.38 * math.sin(a)), (0.5 * math.cos(a), 0.5 * math.sin(a))),
            False,
            0,
        )
        for a in np.arange(8) * np.pi / 4
    ],
    "boat": [
        (_poly((-0.5, 0.2), (0.5, 0.2), (0.34, 0.45), (-0.34, 0.45)), True, 0),
        (_poly((0.0, -0.5), (0.0, 0.2)), False, 2),
        (_poly((0.04, -0.45), (0.04, 0.12), (0.42, 0.12)), True, 1),
    ],
    "car": [
        (
            _poly(
                (-0.5, 0.0),
                (-0.28, 0.0),
                (-0.16, -0.22),
                (0.2, -0.22),
                (0.32, 0.0),
                (0.5, 0.02),
                (0.5, 0.22),
                (-0.5, 0.22),
            ),
            True,
            0,
        ),
        (_circle(-0.27, 0.24, 0.12), True, 2),
        (_circle(0.27, 0.24, 0.12), True, 2),
    ],
    "star": [(_star(), True, 0)],
    "mountain": [
        (_poly((-0.5, 0.45), (-0.05, -0.45), (0.5, 0.45)), True, 0),
        (
            _poly((-0.2, -0.15), (-0.05, -0.45), (0.11, -0.13), (0.03, -0.08), (-0.06, -0.16)),
            True,
            1,
        ),
    ],
    "fish": [
        (_circle(-0.08, 0.0, 0.36, 0.2), True, 0),
        (_poly((0.26, 0.0), (0.5, -0.2), (0.5, 0.2)), True, 1),
        (_circle(-0.28, -0.04, 0.035, n=12), True, 2),
    ],
    "tower": [
        (_poly((-0.18, -0.35), (0.18, -0.35), (0.24, 0.5), (-0.24, 0.5)), True, 0),
        (_poly((-0.24, -0.35), (0.0, -0.5), (0.24, -0.35)), True, 1),
        (_poly((-0.06, -0.15), (0.06, -0.15), (0.06, 0.05), (-0.06, 0.05)), True, 2),
    ],
    "cloud": [
        (_circle(-0.22, 0.06, 0.2, 0.16), True, 0),
        (_circle(0.02, -0.06, 0.26, 0.2), True, 0),
        (_circle(0.25, 0.07, 0.2, 0.15), True, 0),
    ],
}
_KINDS = tuple(_PIECES)
# Base hues (0..1) of each kind's colour roles; an object's hue shifts them all.
_PALETTES = {
    "house": ((0.03, 0.55, 0.75), (0.05, 0.65, 0.45), (0.08, 0.5, 0.3)),
    "tree": ((0.3, 0.6, 0.45), (0.07, 0.6, 0.35), (0.3, 0.6, 0.3)),
    "sun": ((0.13, 0.85, 0.95), (0.1, 0.8, 0.9), (0.1, 0.8, 0.9)),
    "boat": ((0.0, 0.65, 0.6), (0.6, 0.1, 0.95), (0.08, 0.5, 0.3)),
    "car": ((0.6, 0.7, 0.65), (0.6, 0.3, 0.8), (0.0, 0.0, 0.15)),
    "star": ((0.14, 0.8, 0.9), (0.14, 0.8, 0.9), (0.14, 0.8, 0.9)),
    "mountain": ((0.62, 0.25, 0.45), (0.6, 0.05, 0.97), (0.6, 0.2, 0.5)),
    "fish": ((0.08, 0.8, 0.85), (0.05, 0.8, 0.7), (0.0, 0.0, 0.1)),
    "tower": ((0.1, 0.2, 0.7), (0.0, 0.6, 0.5), (0.6, 0.3, 0.3)),
    "cloud": ((0.6, 0.05, 0.92), (0.6, 0.05, 0.92), (0.6, 0.05, 0.92)),
}
_SLOTS = [(x, y) for y in (0.32, 0.68) for x in (0.2, 0.5, 0.8)]


@dataclass(frozen=True)
class _Scene:
    objects: tuple[_Object, ...]
    horizon: tuple[float, float, float] | None  # height, wave amplitude, wave phase
    ground_hue: float


def _compose(rng: np.random.Generator) -> _Scene:
    count = int(rng.choice([1, 2, 3], p=[0.3, 0.45, 0.25]))
    slots = rng.choice(len(_SLOTS), size=count, replace=False)
    kinds = rng.choice(len(_KINDS), size=count, replace=False)
    objects = tuple(
        _Object(
            kind=_KINDS[k],
            x=_SLOTS[s][0] + rng.normal(0, 0.04),
            y=_SLOTS[s][1] + rng.normal(0, 0.04),
            size=float(rng.uniform(0.3, 0.46) * (1.25 if count == 1 else 1.0)),
            angle=float(rng.normal(0, 8)),
            hue=float(rng.normal(0, 0.04)),
        )
        for k, s in zip(kinds, slots, strict=True)
    )
    horizon = None
    if rng.random() < 0.5:
        horizon = (
            float(rng.uniform(0.62, 0.8)),
            float(rng.uniform(0.01, 0.04)),
            float(rng.uniform(0, 2 * np.pi)),
        )
    return _Scene(objects, horizon, float(rng.choice([0.3, 0.1, 0.58])))


def _random_object(
    rng: np.random.Generator, not_kind: str | None = None, small: bool = False
) -> _Object:
    kinds = [k for k in _KINDS if k != not_kind]
    size = rng.uniform(0.1, 0.2) if small else rng.uniform(0.28, 0.44)
    return _Object(
        kind=kinds[int(rng.integers(len(kinds)))],
        x=float(rng.uniform(0.12, 0.88)),
        y=float(rng.uniform(0.15, 0.85)),
        size=float(size),
        angle=float(rng.uniform(-40, 40)),
        hue=float(rng.uniform(-0.5, 0.5)),
    )


def _change(scene: _Scene, d: float, rng: np.random.Generator) -> tuple[_Scene, str]:
    """The scene of an image at dissimilarity d, and a record of the changes made."""
    direction = rng.uniform(0, 2 * np.pi)
    shift = 0.22 * d * np.array([np.cos(direction), np.sin(direction)])
    scale = float(np.exp(rng.choice([-1.0, 1.0]) * 0.35 * d))
    rotation = float(rng.choice([-1.0, 1.0]) * 30.0 * d)
    replace_p = float(np.clip(1.6 * d - 0.6, 0.0, 1.0))
    objects: list[_Object] = []
    missing = replaced = missing_parts = 0
    for index, obj in enumerate(scene.objects):
        later = len(scene.objects) - index - 1
        # An object goes missing, but never all: an empty frame is not a degraded match.
        if rng.random() < 0.6 * d**2 and (objects or later > 0):
            missing += 1
            continue
        if rng.random() < replace_p:
            replaced += 1
            objects.append(_random_object(rng, not_kind=obj.kind))
            continue
        x, y = _rotate(obj.x - 0.5, obj.y - 0.5, rotation)
        objects.append(
            _Object(
                kind=obj.kind,
                x=0.5 + scale * x + shift[0] + rng.normal(0, 0.05 * d),
                y=0.5 + scale * y + shift[1] + rng.normal(0, 0.05 * d),
                size=obj.size * scale * float(np.exp(rng.normal(0, 0.15 * d))),
                angle=obj.angle + rotation,
                hue=obj.hue,
                dropped=tuple(
                    k for k in range(1, len(_PIECES[obj.kind])) if rng.random() < 0.3 * d
                ),
            )
        )
        missing_parts += len(objects[-1].dropped)
    clutter = int(np.floor(6.0 * d**1.2 + rng.random()))
    extra = [_random_object(rng, small=True) for _ in range(clutter)]
    horizon = scene.horizon
    if horizon is not None:
        if rng.random() < replace_p:
            horizon = (
                float(rng.uniform(0.3, 0.85)),
                float(rng.uniform(0.0, 0.08)),
                float(rng.uniform(0, 2 * np.pi)),
            )
        else:
            horizon = (horizon[0] + shift[1] + 0.05 * rotation / 30.0, horizon[1], horizon[2])
    changes = (
        f"shift={np.hypot(*shift):.3f};scale={scale:.3f};rotation={rotation:.1f};"
        f"missing={missing};missing_parts={missing_parts};replaced={replaced};"
        f"clutter={clutter}"
    )
    # Clutter is drawn first: behind the scene's own objects.
    return _Scene(tuple(extra + objects), horizon, scene.ground_hue), changes


def _rotate(x: float, y: float, degrees: float) -> tuple[float, float]:
    a = math.radians(degrees)
    return x * math.cos(a) - y * math.sin(a), x * math.sin(a) + y * math.cos(a)


def _pieces(obj: _Object, width: int, height: int) -> list[tuple[np.ndarray, bool, int]]:
    """An object's pieces in pixel coordinates."""
    a = math.radians(obj.angle)
    rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    scale = obj.size * height
    centre = np.array([obj.x * width, obj.y * height])
    return [
        (points @ rot.T * scale + centre, closed, role)
        for k, (points, closed, role) in enumerate(_PIECES[obj.kind])
        if k not in obj.dropped
    ]


def _horizon_line(horizon: tuple[float, float, float], width: int, height: int) -> np.ndarray:
    level, amplitude, phase = horizon
    x = np.linspace(-0.05, 1.05, 60)
    y = level + amplitude * np.sin(2.5 * np.pi * x + phase)
    return np.column_stack([x * width, y * height])


# --- Drawing ---------------------------------------------------------------------------------


def _render_sketch(scene: _Scene, design: SetDesign, rng: np.random.Generator) -> Image.Image:
    w, h = design.width * _SUPERSAMPLE, design.height * _SUPERSAMPLE
    canvas = Image.new("L", (w, h), 255)
    draw = ImageDraw.Draw(canvas)
    stroke = max(2, round(0.011 * h))
    strokes = []
    if scene.horizon is not None:
        strokes.append((_horizon_line(scene.horizon, w, h), False))
    for obj in scene.objects:
        strokes.extend((points, closed) for points, closed, _ in _pieces(obj, w, h))
    for points, closed in strokes:
        line = _wobble(points, closed, 0.006 * h, rng)
        draw.line([tuple(p) for p in line], fill=0, width=stroke, joint="curve")
        if rng.random() < 0.2:  # a second, slightly offset pass, as people retrace
            line = _wobble(points, closed, 0.006 * h, rng) + rng.normal(0, 0.003 * h, 2)
            draw.line([tuple(p) for p in line], fill=0, width=max(1, stroke - 1), joint="curve")
    return canvas.reduce(_SUPERSAMPLE)


def _wobble(
    points: np.ndarray, closed: bool, amplitude: float, rng: np.random.Generator
) -> np.ndarray:
    """A hand-drawn version of a polyline: resampled, displaced smoothly, ends overshooting."""
    path = np.vstack([points, points[:1]]) if closed else points
    steps = np.hypot(*np.diff(path, axis=0).T)
    length = np.concatenate([[0.0], np.cumsum(steps)])
    if length[-1] <= 0:
        return path
    n = max(8, int(length[-1] / 3))
    if closed:
        # Start a little early and stop a little late: the stroke ends overshoot and miss.
        t = np.linspace(-rng.uniform(0.0, 0.04), 1.0 + rng.uniform(0.02, 0.08), n) * length[-1]
        t = np.mod(t, length[-1])
    else:
        t = np.linspace(0.0, 1.0, n) * length[-1]
    x = np.interp(t, length, path[:, 0])
    y = np.interp(t, length, path[:, 1])
    s = np.linspace(0.0, 1.0, n)
    offset = np.zeros(n)
    for frequency in (1.0, 2.5, 5.0):
        offset += rng.normal(0, 1.0 / frequency) * np.sin(
            2 * np.pi * frequency * s + rng.uniform(0, 2 * np.pi)
        )
    dx, dy = np.gradient(x), np.gradient(y)
    norm = np.hypot(dx, dy) + 1e-9
    return np.column_stack([x - amplitude * offset * dy / norm, y + amplitude * offset * dx / norm])


def _rgb(hue: float, saturation: float, value: float) -> tuple[int, int, int]:
    import colorsys

    r, g, b = colorsys.hsv_to_rgb(
        hue % 1.0, float(np.clip(saturation, 0, 1)), float(np.clip(value, 0, 1))
    )
    return round(r * 255), round(g * 255), round(b * 255)


def _render_image(
    scene: _Scene, design: SetDesign, rng: np.random.Generator, noise: _SensorNoise
) -> Image.Image:
    w, h = design.width * _SUPERSAMPLE, design.height * _SUPERSAMPLE
    rows = np.linspace(0.0, 1.0, h)[:, None, None]  # a vertical gradient, one column wide
    if scene.horizon is not None:
        top, bottom = np.array(_rgb(0.58, 0.45, 0.95)), np.array(_rgb(0.58, 0.15, 1.0))
    else:
        hue = rng.uniform(0, 1)
        top = np.array(_rgb(hue, 0.15, rng.uniform(0.75, 0.95)))
        bottom = np.array(_rgb(hue, 0.25, rng.uniform(0.5, 0.7)))
    column = np.rint(top + (bottom - top) * rows).astype(np.uint8)
    canvas = Image.fromarray(column).resize((w, h), Image.Resampling.NEAREST)
    draw = ImageDraw.Draw(canvas)
    if scene.horizon is not None:
        line = _horizon_line(scene.horizon, w, h)
        ground = [tuple(p) for p in line] + [(w * 1.05, h * 1.2), (-w * 0.05, h * 1.2)]
        draw.polygon(ground, fill=_rgb(scene.ground_hue, 0.55, 0.6))
    line_width = max(2, round(0.012 * h))
    for obj in scene.objects:
        palette = _PALETTES[obj.kind]
        for points, closed, role in _pieces(obj, w, h):
            hue, saturation, value = palette[role]
            colour = _rgb(hue + obj.hue, saturation, value)
            outline = [tuple(p) for p in points]
            if closed:
                draw.polygon(outline, fill=colour)
            else:
                draw.line(outline, fill=colour, width=line_width)
    # A little sensor noise, so that flat areas are not perfectly flat.
    return noise.added_to(canvas.reduce(_SUPERSAMPLE), rng)


class _SensorNoise:
    """Adds N(0, 3) to every channel of an image, in arrays kept from one image to the next:
    fresh arrays per image would page-fault on every page (``benchmarks/bench_generate_noise.py``).
    """

    def __init__(self, design: SetDesign):
        shape = (design.height, design.width, 3)
        self._draws = np.empty(shape)
        self._pixels = np.empty(shape, dtype=np.float32)

    def added_to(self, canvas: Image.Image, rng: np.random.Generator) -> Image.Image:
        # The numbers of rng.normal(0.0, 3.0, shape) (3 z of the same stream), in single
        # precision (tests/stimuli/test_generate.py compares the two).
        rng.standard_normal(out=self._draws)
        self._draws *= 3.0
        pixels = self._pixels
        np.copyto(pixels, self._draws, casting="same_kind")
        pixels += np.asarray(canvas)
        np.rint(pixels, out=pixels)
        np.clip(pixels, 0, 255, out=pixels)
        return Image.fromarray(pixels.astype(np.uint8))
