"""The simulated participant of ``sbir-study run --simulate``: the rater model of
:mod:`sbir_study.analysis.simulate`, its keys pressed through the keyboard device's
``makeResponse`` at the simulated response times, taking the path real ones take.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ..protocol import Protocol

if TYPE_CHECKING:
    from psychopy.hardware.keyboard import Keyboard

    from sbir_study.stimuli import StimulusSet

__all__ = ["Responder", "simulated_answers"]


class Responder:
    """A simulated participant pressing keys through the keyboard device's ``makeResponse``."""

    def __init__(self, kb: Keyboard, answers: pd.DataFrame, key_names: tuple[str, ...]) -> None:
        self.kb = kb
        self.answers = answers  # rating (or NA) and rt per trial, in trial order
        self.key_names = key_names
        self._due: list[tuple[float, str]] = []

    def plan(self, index: int, onset: float) -> None:
        """Press the trial's rating key (rating r: the r-th key) at onset + rt, unless missed."""
        rating = self.answers["rating"].iloc[index]
        if not pd.isna(rating):
            rt = float(self.answers["rt"].iloc[index])
            self.schedule(self.key_names[int(rating) - 1], onset + rt)

    def schedule(self, name: str, at: float) -> None:
        self._due.append((at, name))

    def act(self, now: float) -> None:
        """Press every key that is due, time-stamped when it was due."""
        for at, name in [d for d in self._due if d[0] <= now]:
            self.kb.device.makeResponse(code=name, tDown=at)
            self._due.remove((at, name))


def simulated_answers(
    protocol: Protocol, stimulus_set: StimulusSet, trials: pd.DataFrame, seed: int
) -> pd.DataFrame:
    """The simulated rating (on the protocol's scale, as ``simulate --scale`` maps it) and response
    time per trial. Practice pairs are answered apart by the same seed, so the rest are
    ``simulate``'s participant's answers, which has no practice block.
    """
    from sbir_study.analysis.simulate import RaterModel, simulated_responses

    window = protocol.timing.stimulus_s + protocol.timing.blank_s
    practice = trials["phase"].eq("practice").to_numpy()
    parts = [trials[practice], trials[~practice]] if practice.any() else [trials]
    answers = [
        simulated_responses(
            stimulus_set.manifest, part, RaterModel(), seed, window_s=window, scale=protocol.scale
        )
        for part in parts
    ]
    return pd.concat(answers).reindex(trials.index)
