"""Moved; this old import path still works, with a DeprecationWarning."""

from analysis._moved import moved

moved(__name__, "analysis.checks")
