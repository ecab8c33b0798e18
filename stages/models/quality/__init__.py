"""The ``quality`` stage (:mod:`.stage`) and the fastText classifier behind it:
training, evaluation and calibration (:mod:`.train`, ``datapipe quality train``) on
inputs read by :mod:`.inputs`. See ``docs/quality.md``."""

from stages.models.quality.stage import QUALITY_SCORE, QualityConfig, QualityFilter, calibrated_threshold, pareto_keep

__all__ = ["QUALITY_SCORE", "QualityConfig", "QualityFilter", "calibrated_threshold", "pareto_keep"]
