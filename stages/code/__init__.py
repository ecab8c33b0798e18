"""Stages for code corpora: the StarCoder/The Stack file rules (``code_filter``),
repository licenses (``license``) and repository metadata (``repo_meta``)."""

from stages.code.filters import CodeFilter, CodeFilterConfig, CodeLimits
from stages.code.license import LicenseConfig, LicenseFilter, RepoMetaConfig, RepoMetaFilter

__all__ = ["CodeFilter", "CodeFilterConfig", "CodeLimits", "LicenseConfig", "LicenseFilter", "RepoMetaConfig",
           "RepoMetaFilter"]
