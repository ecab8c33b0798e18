"""The stage registry: a plain dict from the name used in job specs to the class.

Adding a stage touches three files: its module, one line here, its test (see "Adding a
filter" in docs/engine.md). The engine finds this dict through the ``stages`` plugin
(:mod:`stages.plugin`); it never imports this package by name.
"""

from __future__ import annotations

from datapipe.stage import Stage
from stages.heuristics.basic import LengthFilter, Normalize
from stages.heuristics.c4 import C4
from stages.code import CodeFilter, LicenseFilter, RepoMetaFilter
from stages.code.forks import RepoDedup
from stages.code.repo_files import RepoFiles
from stages.decontam import Decontaminate
from stages.dedup import Dedup
from stages.heuristics.filter_expr import FilterExpr
from stages.extract import Extract
from stages.heuristics.fineweb import FineWeb
from stages.heuristics.gopher_quality import GopherQuality
from stages.heuristics.gopher_repetition import GopherRepetition
from stages.models.langid import LangId
from stages.dedup.latest_version import LatestVersion
from stages.dedup.lines import LineDedup
from stages.models.stage import Classify, Embed
from stages.models.perplexity import PerplexityFilter
from stages.pii import PiiStage
from stages.models.quality import QualityFilter
from stages.models.quality_levels import QualityLevels
from stages.dedup.semantic import SemanticDedup
from stages.tokenize import Tokenize
from stages.heuristics.url_filter import UrlFilter

REGISTRY: dict[str, type[Stage]] = {
    "extract": Extract,
    "normalize": Normalize,
    "length": LengthFilter,
    "filter_expr": FilterExpr,
    "langid": LangId,
    "gopher_repetition": GopherRepetition,
    "gopher_quality": GopherQuality,
    "c4": C4,
    "fineweb": FineWeb,
    "code_filter": CodeFilter,
    "license": LicenseFilter,
    "repo_meta": RepoMetaFilter,
    "repo_dedup": RepoDedup,
    "repo_files": RepoFiles,
    "quality": QualityFilter,
    "perplexity": PerplexityFilter,
    "dedup": Dedup,
    "line_dedup": LineDedup,
    "pii": PiiStage,
    "tokenize": Tokenize,
    "url_filter": UrlFilter,
    "decontaminate": Decontaminate,
    "latest_version": LatestVersion,
    "classify": Classify,
    "embed": Embed,
    "semantic_dedup": SemanticDedup,
    "quality_levels": QualityLevels,
}

