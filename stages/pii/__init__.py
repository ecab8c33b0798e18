"""PII scrubbing: detectors with validation (``detect``), replacement policies
(``replace``) and the ``pii`` formatter stage (``stage``). See ``docs/pii.md``."""

from stages.pii.detect import PII_TYPES, Detector, Span
from stages.pii.replace import DEFAULT_PLACEHOLDERS, POLICIES, Replacer
from stages.pii.stage import PII_COUNTS_TYPE, PiiConfig, PiiStage

__all__ = [
    "PII_TYPES", "PII_COUNTS_TYPE", "POLICIES", "DEFAULT_PLACEHOLDERS",
    "Detector", "Span", "Replacer", "PiiConfig", "PiiStage",
]
