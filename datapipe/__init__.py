"""datapipe: a pretraining data-pipeline engine on Ray Data.

The public API is small: load a job spec, run it, and the stage base classes to write
new stages with. Everything else is an implementation detail.
"""

from datapipe.errors import CorruptInputError, DatapipeError, JobError, SpecError
from datapipe.stage import (AnnotatorStage, FilterStage, FormatterStage, GlobalStage, Rewrite, RewriteFilterStage,
                            Stage, StageConfig)

__all__ = [
    "AnnotatorStage",
    "CorruptInputError",
    "DatapipeError",
    "FilterStage",
    "FormatterStage",
    "GlobalStage",
    "JobError",
    "Rewrite",
    "RewriteFilterStage",
    "SpecError",
    "Stage",
    "StageConfig",
    "load_job",
    "run_job",
]


def load_job(path, *, output=None):
    """Load and check a job spec (see :mod:`datapipe.spec`)."""
    from datapipe.spec import load_job as _load

    return _load(path, output=output)


def run_job(job, *, force=False):
    """Run a loaded job (see :mod:`datapipe.runner`)."""
    from datapipe.runner import run_job as _run

    return _run(job, force=force)
