"""Simulated participants: a generative model of how people rate sketch/image pairs.

Per pair i of sketch s and participant j (``docs/simulation.md`` says how the
defaults, which make the statistics look like the paper's, were chosen):

* **Latent rating** mu_i in [1, 7] (1 = best): a sketch's images stratified over the
  scale, mu_i = 1 + 6 (pi(i) + u_i) / n, pi a random permutation, u_i ~ U(0, 1), as
  the paper's selection aims for (Sec. 2.2); an anchor pair's is its prescribed rating.
* **Sketch range**: mu_i <- 4 + c_s (mu_i - 4), c_s ~ U(``sketch_range_min``, 1), so
  for some sketches even the best image is only a fair match.
* **Rater bias** b_j ~ N(0, ``bias_sd``).
* **Noise**: y_ij = mu_i + b_j + e_ij, e_ij ~ N(0, (sigma_j a_s h(mu_i))^2), sigma_j
  log-normal around ``noise``, a_s (the sketch's ambiguity) log-normal around 1,
  h(mu) = 1 + (``mid_scale_noise`` - 1)(1 - ((mu - 4) / 3)^2): average matches are
  judged less alike than clear ones (the paper's Fig. 8).
* **Anchor pairs** are perceived at mu_i + d_ij, d_ij ~ N(0, ``anchor_disagreement_sd``):
  a prescribed rating does not make everyone see the pair so (77.4% of the paper's
  anchoring correlations were significant, not all).
* **Rounding** to the nearest integer, clipped to 1..7; with probability
  ``miss_rate`` no key is pressed (rating and response time missing).
* **Another scale** ``low..high`` of k points: y maps to low + (y - 1)(k - 1) / 6
  before rounding and clipping, reversed (r -> low + high - r) where high is the best
  match; prescribed anchor ratings map back onto 1..7 for the model.
* **Response time**: log-normal with median ``rt_median`` s, up to ``rt_mid_slowdown``
  slower mid-scale, truncated to the 3 s response window.

Sessions follow the paper (Sec. 2.3) and the order of ``sbir-study run``
(:func:`sbir_study.foundation.trial_order.session_order`): the anchor pairs shown with
their ratings (``anchor_demo``), then the main pairs in random order, each anchor pair
again after the first ``anchor_repeat_from`` of them (``anchor_repeat``).
:func:`rate_trials` is the one model of both ``sbir-study simulate``
(:func:`simulate_study`) and ``run --simulate`` (:func:`simulated_responses`): a
participant's session seed (``Seed`` in its sidecar) draws the order, the stream
``[seed, 1]`` the ratings, and a set's pair-level draws come from the set's content,
so ``run --simulate --seed S`` on a set rates as the simulated participant with seed
S of any ``simulate --stimuli`` dataset of it. One
:class:`numpy.random.SeedSequence` gives a stream for a made-up design and one per
participant: participant k's data do not depend on how many are simulated.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from sbir_study.foundation import bids, paper
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.paper import SCALE
from sbir_study.foundation.scale import PAPER_SCALE, Scale
from sbir_study.foundation.trial_order import session_order

__all__ = [
    "RaterModel",
    "StudyDesign",
    "design_for_set",
    "main_block_ratings",
    "participant_seed",
    "rate_trials",
    "simulate_study",
    "simulated_responses",
    "write_simulated_dataset",
]


@dataclass(frozen=True)
class StudyDesign(paper.PairDesign):
    """Size and timing of a simulated study: the pairs, the participants and the durations."""

    participants: int = paper.PARTICIPANTS
    #: Anchor repeats go after this fraction of the main block ("the later part").
    anchor_repeat_from: float = 0.5
    stimulus_s: float = paper.STIMULUS_S
    blank_s: float = paper.BLANK_S

    def __post_init__(self) -> None:
        super().__post_init__()
        value = self.participants
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
            raise InputError(f"participants: expected a whole number >= 1, got {value!r}")
        if not 0.0 <= self.anchor_repeat_from < 1.0:
            raise InputError(
                f"anchor_repeat_from: expected a fraction in [0, 1), got {self.anchor_repeat_from}"
            )


@dataclass(frozen=True)
class RaterModel:
    """The rater model: how a simulated participant rates (see the module docstring)."""

    bias_sd: float = 0.3
    noise: float = 1.15
    noise_sd_log: float = 0.35
    sketch_ambiguity_sd_log: float = 0.3
    mid_scale_noise: float = 1.2
    anchor_disagreement_sd: float = 1.1
    sketch_range_min: float = 0.6
    miss_rate: float = 0.01
    rt_median: float = 1.1
    rt_sd_log: float = 0.3
    rt_mid_slowdown: float = 0.3

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not np.isfinite(value) or value < 0:
                raise InputError(f"{item.name}: expected a non-negative number, got {value!r}")
        if self.miss_rate >= 1:
            raise InputError(f"miss_rate: expected a probability below 1, got {self.miss_rate}")
        if not 0.0 < self.sketch_range_min <= 1.0:
            raise InputError(
                f"sketch_range_min: expected a fraction in (0, 1], got {self.sketch_range_min}"
            )
        if self.mid_scale_noise < 1:
            raise InputError(f"mid_scale_noise: expected a factor >= 1, got {self.mid_scale_noise}")


def simulate_study(
    design: StudyDesign = StudyDesign(),
    model: RaterModel = RaterModel(),
    seed: int = 0,
    *,
    stimuli: pd.DataFrame | None = None,
    scale: Scale = PAPER_SCALE,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Simulate every session of a study, its ratings on ``scale``.

    With ``stimuli`` (a set's manifest: ``sketch_id, image_id, role, anchor_rating``,
    ``latent_similarity`` when known) the participants rate that set's pairs: a latent
    rating is 7 - 6 s for latent similarity s, else drawn as for a made-up sketch;
    ``main`` and ``candidate`` pairs are the main block. Only ``participants`` and the
    timing of ``design`` are used then.

    Returns
    -------
    trials : DataFrame
        A row per presented pair and participant: the ratings-table columns, the timing
        columns a session records (``onset, stim_duration, blank_duration, n_presses,
        presses``) and ``latent_rating``.
    participants : DataFrame
        ``participant, rater_bias, rater_noise, session_seed``.

    Examples
    --------
    >>> trials, people = simulate_study(StudyDesign(participants=2, sketches=2,
    ...                                             images_per_sketch=5), seed=1)
    >>> trials.groupby("phase").size()
    phase
    anchor_demo      42
    anchor_repeat    42
    main             20
    dtype: int64
    """
    streams = np.random.SeedSequence(seed).spawn(design.participants + 1)
    if stimuli is None:
        if design.anchor_sketches and design.anchor_images > scale.k:
            raise InputError(
                f"anchor_images: expected at most one per point of the scale "
                f"{scale} ({scale.k}), got {design.anchor_images}"
            )
        pairs = _pairs(design, np.random.default_rng(streams[0]), model, scale)
    else:
        pairs = _set_pairs(stimuli, model, scale)
    sessions, people = [], []
    for index, stream in enumerate(streams[1:]):
        label = f"{index + 1:0{max(2, len(str(design.participants)))}d}"
        session_seed = participant_seed(stream)
        trials, bias, noise = _session(label, pairs, design, model, session_seed, scale)
        sessions.append(trials)
        people.append((label, bias, noise, session_seed))
    participants = pd.DataFrame(
        people, columns=["participant", "rater_bias", "rater_noise", "session_seed"]
    )
    return pd.concat(sessions, ignore_index=True), participants


def participant_seed(stream: np.random.SeedSequence) -> int:
    """A participant's session seed from its stream: 63 bits, as ``sbir-study run`` draws one."""
    return int(stream.generate_state(1, np.uint64)[0] >> np.uint64(1))


def _pairs(
    design: StudyDesign, rng: np.random.Generator, model: RaterModel, scale: Scale = PAPER_SCALE
) -> pd.DataFrame:
    """The stimulus pairs with their latent ratings and sketch ambiguity."""
    rows = []
    for a in range(design.anchor_sketches):
        sketch = f"a{a + 1:02d}"
        # The prescribed ratings spread evenly over the scale, best first: 1..7 for 7 images.
        spread = np.rint(np.linspace(scale.low, scale.high, design.anchor_images)).astype(int)
        for i, point in enumerate(spread):
            rating = int(scale.oriented(point))
            anchor_latent = float(_to_model(point, scale))
            rows.append((sketch, f"{sketch}_i{i + 1:02d}", "anchor", anchor_latent, rating))
    n = design.images_per_sketch
    for s in range(design.sketches):
        sketch = f"s{s + 1:02d}"
        latent = _sketch_latent(n, model, rng)
        for i in range(n):
            rows.append((sketch, f"{sketch}_i{i + 1:02d}", "main", latent[i], pd.NA))
    pairs = pd.DataFrame(rows, columns=["sketch_id", "image_id", "role", "latent", "anchor_rating"])
    return _with_ambiguity(pairs, model, rng)


def _with_ambiguity(pairs: pd.DataFrame, model: RaterModel, rng: np.random.Generator):
    """``pairs`` with each sketch's ambiguity a_s drawn."""
    codes, sketches = pd.factorize(pairs["sketch_id"])
    ambiguity = rng.lognormal(0.0, model.sketch_ambiguity_sd_log, size=len(sketches))
    return pairs.assign(ambiguity=ambiguity[codes])


def _set_pairs(
    manifest: pd.DataFrame, model: RaterModel, scale: Scale = PAPER_SCALE
) -> pd.DataFrame:
    """A set's pairs with latent ratings and ambiguity, drawn from a seed of its content."""
    columns = [
        c
        for c in ("sketch_id", "image_id", "role", "anchor_rating", "latent_similarity")
        if c in manifest.columns
    ]
    content = manifest[columns].astype(str).to_csv(index=False, lineterminator="\n")
    entropy = int.from_bytes(hashlib.sha256(content.encode("utf-8")).digest()[:16], "big")
    rng = np.random.default_rng(entropy)
    pairs = manifest[["sketch_id", "image_id"]].astype(str).copy()
    is_anchor = (manifest["role"] == "anchor").to_numpy()
    pairs["role"] = np.where(is_anchor, "anchor", "main")
    prescribed = pd.to_numeric(manifest.get("anchor_rating"), errors="coerce")
    pairs["anchor_rating"] = (
        pd.array(prescribed, dtype="Float64").astype("Int64") if prescribed is not None else pd.NA
    )
    similarity = manifest.get("latent_similarity")
    latent = (
        7.0 - 6.0 * pd.to_numeric(similarity, errors="coerce").to_numpy(dtype=float)
        if similarity is not None
        else np.full(len(pairs), np.nan)
    )
    prescribed = pairs.loc[is_anchor, "anchor_rating"].to_numpy(dtype=float)
    off = ~np.isin(prescribed, scale.points)
    if off.any():
        where = pairs.loc[is_anchor].iloc[int(np.flatnonzero(off)[0])]
        raise InputError(
            f"stimuli: anchor pair {where['sketch_id']}/{where['image_id']}: prescribed rating "
            f"{prescribed[off][0]:g} is not on the scale {scale}; expected "
            f"{scale.low}..{scale.high}"
        )
    latent[is_anchor] = _to_model(scale.oriented(prescribed), scale)
    for _, rows in pairs.groupby("sketch_id", sort=False).indices.items():
        unknown = rows[np.isnan(latent[rows])]
        if len(unknown):
            latent[unknown] = _sketch_latent(len(unknown), model, rng)
    pairs["latent"] = latent
    pairs = _with_ambiguity(pairs, model, rng)
    return pairs[["sketch_id", "image_id", "role", "latent", "anchor_rating", "ambiguity"]]


def _to_model(points, scale: Scale):
    """Points of ``scale`` in the paper's orientation, mapped onto the model's 1..7."""
    return SCALE[0] + (np.asarray(points, dtype=float) - scale.low) * (
        (SCALE[1] - SCALE[0]) / (scale.k - 1)
    )


def _on_scale(response: np.ndarray, scale: Scale) -> np.ndarray:
    """The model's responses on 1..7 as ratings of ``scale``: mapped, rounded, clipped, oriented."""
    mapped = scale.low + (response - SCALE[0]) * ((scale.k - 1) / (SCALE[1] - SCALE[0]))
    return scale.oriented(np.clip(np.rint(mapped), scale.low, scale.high))


def _sketch_latent(n: int, model: RaterModel, rng: np.random.Generator) -> np.ndarray:
    """Latent ratings of one sketch's n images: stratified over the scale, then shrunk."""
    latent = 1.0 + 6.0 * (rng.permutation(n) + rng.random(n)) / n
    # Not every sketch's images span the whole scale: shrink towards the middle.
    return 4.0 + rng.uniform(model.sketch_range_min, 1.0) * (latent - 4.0)


def _mid_scale(latent: np.ndarray, model: RaterModel) -> np.ndarray:
    """h(mu): 1 at the ends of the scale, ``mid_scale_noise`` in the middle, never below 1."""
    shape = 1.0 + (model.mid_scale_noise - 1.0) * (1.0 - ((latent - 4.0) / 3.0) ** 2)
    return np.maximum(shape, 1.0)


def main_block_ratings(
    design: StudyDesign, model: RaterModel, participants: int, rng: np.random.Generator
) -> np.ndarray:
    """Main-block ratings (sketches x participants x images, NaN: missed) for planning.

    The model of :func:`simulate_study` without sessions, orders, anchors or times.
    """
    n = design.images_per_sketch
    latent = np.stack([_sketch_latent(n, model, rng) for _ in range(design.sketches)])
    ambiguity = rng.lognormal(0.0, model.sketch_ambiguity_sd_log, design.sketches)
    bias = rng.normal(0.0, model.bias_sd, participants)
    noise = model.noise * rng.lognormal(0.0, model.noise_sd_log, participants)
    sigma = noise[None, :, None] * ambiguity[:, None, None] * _mid_scale(latent, model)[:, None, :]
    shape = (design.sketches, participants, n)
    response = latent[:, None, :] + bias[None, :, None] + sigma * rng.standard_normal(shape)
    ratings = np.clip(np.rint(response), SCALE[0], SCALE[1])
    ratings[rng.random(shape) < model.miss_rate] = np.nan
    return ratings


def rate_trials(
    trials: pd.DataFrame,
    model: RaterModel,
    rng: np.random.Generator,
    *,
    window_s: float,
    scale: Scale = PAPER_SCALE,
) -> pd.DataFrame:
    """One simulated participant's ratings and response times for a session's trials.

    ``trials`` (in presentation order) has ``phase``, ``latent`` and ``ambiguity``;
    ``anchor_demo`` trials are not rated. Returns ``rating`` (Int64), ``rt`` (s, 0.1 ms
    resolution) and ``perceived`` per trial, and ``rater_bias``, ``rater_noise`` in ``attrs``.
    """
    bias = rng.normal(0.0, model.bias_sd)
    noise = model.noise * rng.lognormal(0.0, model.noise_sd_log)
    phase = trials["phase"].to_numpy()
    repeat = phase == "anchor_repeat"
    # The participant's own view of each anchor pair, which the prescription does not erase.
    perceived = trials["latent"].to_numpy(dtype=float).copy()
    perceived[repeat] += rng.normal(0.0, model.anchor_disagreement_sd, repeat.sum())
    shape = _mid_scale(perceived, model)
    sigma = noise * trials["ambiguity"].to_numpy(dtype=float) * shape
    response = perceived + bias + sigma * rng.standard_normal(len(trials))
    rating = _on_scale(response, scale)
    mid = (shape - 1.0) / max(model.mid_scale_noise - 1.0, 1e-12)
    rt = model.rt_median * (1.0 + model.rt_mid_slowdown * mid)
    rt = np.clip(rt * rng.lognormal(0.0, model.rt_sd_log, len(trials)), 0.2, window_s - 0.01)
    missed = rng.random(len(trials)) < model.miss_rate
    no_rating = missed | (phase == "anchor_demo")
    answers = pd.DataFrame(
        {
            "rating": pd.array(np.where(no_rating, np.nan, rating), dtype="Float64").astype(
                "Int64"
            ),
            "rt": np.where(no_rating, np.nan, np.round(rt, 4)),
            "perceived": perceived,
        },
        index=trials.index,
    )
    answers.attrs.update(rater_bias=float(bias), rater_noise=float(noise))
    return answers


def simulated_responses(
    manifest: pd.DataFrame,
    trials: pd.DataFrame,
    model: RaterModel,
    seed: int,
    *,
    window_s: float,
    scale: Scale = PAPER_SCALE,
) -> pd.DataFrame:
    """What the simulated participant with session seed ``seed`` answers in a session of a set.

    ``trials`` is the session's trial list (``phase, sketch_id, image_id``) as ``run``
    builds it from ``seed``: the answers of that participant of :func:`simulate_study`
    with ``stimuli=manifest``. Returns :func:`rate_trials`' table, indexed like ``trials``.
    """
    pairs = _set_pairs(manifest, model, scale).set_index(["sketch_id", "image_id"])
    keys = pd.MultiIndex.from_arrays(
        [trials["sketch_id"].astype(str), trials["image_id"].astype(str)]
    )
    known = pairs.reindex(keys)
    if known["latent"].isna().any():
        raise InputError("trials: a pair of the trial list is not in the stimulus set's manifest")
    table = pd.DataFrame(
        {
            "phase": trials["phase"].to_numpy(),
            "latent": known["latent"].to_numpy(dtype=float),
            "ambiguity": known["ambiguity"].to_numpy(dtype=float),
        },
        index=trials.index,
    )
    return rate_trials(
        table, model, np.random.default_rng([seed, 1]), window_s=window_s, scale=scale
    )


def _session(
    label: str,
    pairs: pd.DataFrame,
    design: StudyDesign,
    model: RaterModel,
    session_seed: int,
    scale: Scale,
) -> tuple[pd.DataFrame, float, float]:
    order = session_order(
        pairs, np.random.default_rng(session_seed), repeat_from=design.anchor_repeat_from
    )
    trial_s = design.stimulus_s + design.blank_s
    answers = rate_trials(
        order, model, np.random.default_rng([session_seed, 1]), window_s=trial_s, scale=scale
    )
    rated = answers["rating"].notna().to_numpy()
    trials = pd.DataFrame(
        {
            "participant": label,
            "trial": np.arange(1, len(order) + 1),
            "phase": order["phase"],
            "sketch_id": order["sketch_id"],
            "image_id": order["image_id"],
            "rating": answers["rating"],
            "rt": answers["rt"],
            "anchor_rating": order["anchor_rating"].astype("Int64"),
            "onset": np.round(np.arange(len(order)) * trial_s, 4),
            "stim_duration": design.stimulus_s,
            "blank_duration": design.blank_s,
            "n_presses": np.where(rated, 1, 0),
            "presses": [
                f"{int(r)}@{t:.4f}" if ok else "n/a"
                for ok, r, t in zip(rated, answers["rating"].fillna(0), answers["rt"], strict=True)
            ],
            "latent_rating": np.round(order["latent"].to_numpy(dtype=float), 4),
        }
    )
    return trials, answers.attrs["rater_bias"], answers.attrs["rater_noise"]


def sidecar_name(table: str | Path) -> str:
    """The JSON sidecar's name beside a flat ratings table (``ratings.csv`` -> ``ratings.json``)."""
    return Path(table).with_suffix(".json").name


def write_simulated_dataset(
    root: str | Path,
    design: StudyDesign = StudyDesign(),
    model: RaterModel = RaterModel(),
    seed: int = 0,
    *,
    flat: bool = False,
    version: str = "",
    stimuli: pd.DataFrame | None = None,
    stimulus_digest: str | None = None,
    overwrite: bool = False,
    scale: Scale = PAPER_SCALE,
) -> Path:
    """Simulate a study and write it as a BIDS dataset (or one flat table with ``flat``).

    Each ``_beh.json`` sidecar (or the JSON beside a flat table, :func:`sidecar_name`)
    says ``"Simulated": true`` with the design, model, seed and ``RatingScale``, and
    ``StimulusSetDigest`` with ``stimuli``. Written as every output (``docs/outputs.md``):
    aside, then moved into place; an existing one is replaced only with ``overwrite`` and
    only if ``simulate`` wrote it. Returns ``root``.
    """
    from sbir_study.foundation.outputs import output_files, output_folder

    root = Path(root)
    settings = _Settings(design, model, seed, flat, version, stimuli, stimulus_digest, scale)
    if flat:
        if sidecar_name(root) == root.name:
            raise InputError(f"{root}: expected a table name ending in .csv or .tsv")
        with output_files(
            root, "simulate", companions=[sidecar_name(root)], overwrite=overwrite
        ) as (table, _):
            _write_simulated(table, settings)
    else:
        with output_folder(root, "simulate", overwrite=overwrite) as folder:
            _write_simulated(folder, settings)
    return root


class _Settings(NamedTuple):
    design: StudyDesign
    model: RaterModel
    seed: int
    flat: bool
    version: str
    stimuli: pd.DataFrame | None
    stimulus_digest: str | None
    scale: Scale


def _write_simulated(root: Path, settings: _Settings) -> Path:
    """The work of :func:`write_simulated_dataset`, into a temporary folder (or table path)."""
    design, model, seed, flat, version, stimuli, stimulus_digest, scale = settings
    trials, participants = simulate_study(design, model, seed, stimuli=stimuli, scale=scale)
    provenance = {
        "Simulated": True,
        "Origin": "simulate",
        "SimulationSeed": seed,
        "SimulationDesign": asdict(design),
        "SimulationModel": asdict(model),
        "GeneratedBy": f"sbir-study simulate {version}".strip(),
    }
    if stimulus_digest is not None:
        provenance["StimulusSetDigest"] = stimulus_digest
    root = Path(root)
    if flat:
        root.parent.mkdir(parents=True, exist_ok=True)
        sep = "\t" if root.suffix.lower() in (".tsv", ".tab") else ","
        trials.to_csv(root, sep=sep, index=False, na_rep="n/a", lineterminator="\n")
        root.with_suffix(".json").write_text(
            json.dumps({**provenance, "RatingScale": scale.sidecar()}, indent=2) + "\n",
            encoding="utf-8",
        )
        return root

    bids.write_dataset_description(
        root,
        name=f"sbir-study simulated rating study (seed {seed})",
        generated_by={
            "Name": "sbir-study",
            "Version": version or "unknown",
            "Description": "simulated participants (sbir-study simulate)",
        },
        readme=_readme(design, seed),
    )
    bids.write_participants(
        root,
        participants.assign(participant_id="sub-" + participants["participant"])[
            ["participant_id", "rater_bias", "rater_noise"]
        ],
        {
            "participant_id": {"Description": "Simulated participant."},
            "rater_bias": {"Description": "Simulated shift of the rating scale, in scale units."},
            "rater_noise": {"Description": "Simulated rating noise (sd at the scale ends)."},
        },
    )
    seeds = dict(zip(participants["participant"], participants["session_seed"], strict=True))
    for label, session in trials.groupby("participant", sort=True):
        bids.write_beh(root, label, session, {**provenance, "Seed": int(seeds[label])}, scale=scale)
    return root


def _readme(design: StudyDesign, seed: int) -> str:
    return (
        "SIMULATED DATA: no person took part in this study.\n\n"
        f"Ratings of {design.participants} simulated participants for {design.sketches} "
        f"sketches x {design.images_per_sketch} images, with an anchoring block of "
        f"{design.anchor_sketches} sketches x {design.anchor_images} images, written by "
        f"sbir-study simulate with seed {seed}. The generative model is described in "
        "the sbir_study.analysis.simulate module of sbir-study and in each _beh.json sidecar.\n"
    )


def design_for_set(manifest: pd.DataFrame, participants: int) -> StudyDesign:
    """The design of a simulation on a stimulus set, sized by its manifest (anchor rows or not)."""
    rated = manifest[manifest["role"] != "anchor"]
    per_sketch = rated.groupby("sketch_id").size()
    anchors = manifest[manifest["role"] == "anchor"]
    return StudyDesign(
        participants=participants,
        sketches=int(per_sketch.size),
        images_per_sketch=max(int(per_sketch.max()), 2),
        anchor_sketches=int(anchors["sketch_id"].nunique()),
        anchor_images=max(int(anchors.groupby("sketch_id").size().max()), 2)
        if len(anchors)
        else paper.ANCHOR_IMAGES,
    )
