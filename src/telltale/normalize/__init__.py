"""Normalisation: what a command or a file tool call means, whoever spelled it.

Between acquisition and detection (docs/detection.md, "Normalisation"): shell command
lines and written shell scripts are read with a real shell grammar and decoded
(:mod:`telltale.normalize.shell`); the stage (:mod:`telltale.normalize.stage`) puts the
result on the observation as canonical fields rules and events use.
"""
