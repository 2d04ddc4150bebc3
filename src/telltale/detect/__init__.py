"""Detection: a typed YAML rule language, an RE2 engine with a literal prefilter,
ordered sequences within a session, co-occurrence scoring and allowlists.

The pipeline uses :class:`~telltale.detect.engine.DetectionEngine` (``load``,
``evaluate``, ``rule_count``) and persists each session's
:class:`~telltale.detect.model.SessionWindow`. See docs/detection.md.
"""
