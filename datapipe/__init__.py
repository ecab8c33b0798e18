"""datapipe: a pretraining data-pipeline engine on Ray Data.

The public API is small: load a job spec and run it; run one stage on a table or inside
your own Ray Data pipeline (:func:`stage`, :class:`StageUDF`, :func:`stages`, see
``docs/python.md``); and the stage base classes (with :class:`Compute`, how a stage
runs) to write new stages with. Stages and subcommands come from plugins
(:mod:`datapipe.plugins`); the engine never imports them by name. Everything else is an
implementation detail.
"""

from datapipe.api import StageResult, StageRunner, StageUDF, stage, stages
from datapipe.errors import ConflictError, CorruptInputError, DatapipeError, JobError, SpecError
from datapipe.stage import (AnnotatorStage, Compute, FilterStage, FormatterStage, GlobalStage, Rewrite,
                            RewriteFilterStage, Stage, StageConfig)

__all__ = [
    "AnnotatorStage",
    "Compute",
    "ConflictError",
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
    "StageResult",
    "StageRunner",
    "StageUDF",
    "load_job",
    "run_job",
    "stage",
    "stages",
]


def load_job(path, *, output=None):
    """Load and check a job spec (see :mod:`datapipe.spec`)."""
    from datapipe.spec import load_job as _load

    return _load(path, output=output)


def run_job(job, *, force=False):
    """Run a loaded job (see :mod:`datapipe.runner`)."""
    from datapipe.runner import run_job as _run

    return _run(job, force=force)
