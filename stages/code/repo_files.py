"""``repo_files``: ``code_filter``'s file rules applied to each file of a repository
document, the files that fail them taken out of it.

The ``code`` reader builds a ``group: repository`` document before any stage runs, so
``code_filter`` on it judges the repository whole: one minified bundle drops the
repository, and its generated tables, license text and vendored copies stay in its
document (the path rules see no path). StarCoder2 filters files, then groups them. This
stage does that on ``format: starcoder2`` documents, whose files it can split exactly (the
reader rejects a file holding a separator, ``read:separator``): each file is checked by
``code_filter``'s own rules (the same config, the same code: path, language from
:func:`datapipe.readers.code_lang.detect_language`, text), the document is rewritten with
the files that pass, in the order they had, and a repository left with no file is
dropped as ``repo_files:no_files`` (detail: how many files and the first one's reason).
Counters per document: ``files_removed``, ``bytes_removed`` (UTF-8 bytes of the removed
files with their separators and paths) and ``files_removed:<rule>`` per ``code_filter``
rule (``files_removed:generated``, ``files_removed:minified``...). Any other document (a file, ``group:
file``; a ``format: header`` repository) is judged whole, as ``code_filter`` would,
with ``code_filter``'s reasons under this stage's name. The document's ``size`` and
``language`` columns stay the reader's (all its files).

Config: ``code_filter``'s (``- repo_files: {minified_line_length: 400}``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyarrow as pa

from datapipe import schema as S
from datapipe.readers.code_lang import detect_language
from datapipe.stage import Rewrite, RewriteFilterStage
from stages.code.filters import CodeFilter, CodeFilterConfig

REPO_NAME, FILE_SEP = "<repo_name>", "<file_sep>"


@dataclass(kw_only=True, frozen=True)
class RepoFilesConfig(CodeFilterConfig):
    """``code_filter``'s options, applied per file of a repository document."""


def split_repository(text: str) -> tuple[str, list[tuple[str, str]]] | None:
    """A ``format: starcoder2`` document as ``(its <repo_name> head, [(path, content)])``,
    or None when the text is not one."""
    if not text.startswith(REPO_NAME):
        return None
    head, *parts = text.split(FILE_SEP)
    files = []
    for part in parts:
        path, nl, content = part.partition("\n")
        if not nl:
            return None
        files.append((path, content))
    return head, files


class RepoFiles(RewriteFilterStage):
    """Removes the files that fail ``code_filter``'s rules from each repository document
    (see the module docstring)."""

    name = "repo_files"
    Config = RepoFilesConfig
    reads: ClassVar[tuple[str, ...]] = (S.TEXT, "path", "language")

    def setup(self) -> None:
        self._filter = CodeFilter(self.config)
        self._filter.setup()

    def rewrite(self, batch: pa.Table) -> Rewrite:
        n = batch.num_rows
        texts = batch.column(S.TEXT).to_pylist()
        paths = batch.column("path").to_pylist()
        langs = batch.column("language").to_pylist()
        f_text: list[str | None] = []
        f_path: list[str | None] = []
        f_lang: list[str | None] = []
        owner: list[int] = []
        split: dict[int, tuple[str, list[tuple[str, str]]]] = {}
        for i, text in enumerate(texts):
            doc = split_repository(text) if paths[i] is None and text is not None else None
            if doc is None or not doc[1]:   # judged whole, as code_filter would
                f_text.append(text), f_path.append(paths[i]), f_lang.append(langs[i]), owner.append(i)
                continue
            split[i] = doc
            for path, content in doc[1]:
                f_text.append(content), f_path.append(path), f_lang.append(detect_language(path, content))
                owner.append(i)
        files = pa.table({S.TEXT: pa.array(f_text, pa.string()), "path": pa.array(f_path, pa.string()),
                          "language": pa.array(f_lang, pa.string())})
        result = self._filter.keep(files)
        ok, why = np.asarray(result[0], dtype=bool), list(result[1])
        keep = np.ones(n, dtype=bool)
        reasons: list[str | None] = [None] * n
        new_texts = list(texts)
        removed = np.zeros(n, dtype=np.int64)
        removed_bytes = np.zeros(n, dtype=np.int64)
        by_rule: dict[str, np.ndarray] = {}
        at = 0
        for i in range(n):
            if i not in split:
                keep[i], reasons[i] = ok[at], why[at]
                at += 1
                continue
            head, doc_files = split[i]
            kept, first = [], None
            for k, (path, content) in enumerate(doc_files):
                if ok[at + k]:
                    kept.append((path, content))
                    continue
                removed[i] += 1
                removed_bytes[i] += len(f"{FILE_SEP}{path}\n{content}".encode("utf-8", "surrogatepass"))
                rule = f"files_removed:{why[at + k].split('|', 1)[0]}"
                by_rule.setdefault(rule, np.zeros(n, dtype=np.int64))[i] += 1
                if first is None:
                    first = f"{path}: {why[at + k].replace('|', ' ', 1)}"
            at += len(doc_files)
            if not kept:
                keep[i] = False
                reasons[i] = f"no_files|{len(doc_files)} file(s), all removed; first {first}"
            elif removed[i]:
                new_texts[i] = head + "".join(f"{FILE_SEP}{p}\n{c}" for p, c in kept)
        return Rewrite(texts=pa.array(new_texts, pa.string()), keep=keep, reasons=reasons,
                       changes={"files_removed": removed, "bytes_removed": removed_bytes, **by_rule})
