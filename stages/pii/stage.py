"""The ``pii`` formatter stage: find personal data and secrets, replace them per type,
count them.

Cost model. Most documents hold no PII, so the stage first evaluates the cheap gates
of all detector families (``Detector.gates``), as one RE2 alternation over the whole
Arrow batch (``pyarrow.compute.match_substring_regex``): linear in the batch's bytes,
no Python per document. The per-family gates then run on the hits only; only those
documents are decoded to ``str`` and handed to the Python detectors, and only the
families whose gate fired run on them. Each gate
is a necessary condition of its family's detections, so the result is identical to
running every detector on every document (``Detector.find(text, gated=False)``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.stage import FormatterStage, StageConfig
from stages.pii.detect import PII_TYPES, Detector, Span
from stages.pii.replace import POLICIES, Replacer

logger = logging.getLogger(__name__)

#: Arrow type of the ``pii_counts`` column: one int32 field per type, in
#: :data:`PII_TYPES` order; a field is null when that type is not enabled.
PII_COUNTS_TYPE = pa.struct([pa.field(t, pa.int32()) for t in PII_TYPES])

#: Used when a job sets no ``key``: fine for placeholders, but set your own key for
#: pseudonyms, or anyone holding this code can confirm a guessed original.
DEFAULT_KEY = "datapipe-pii-default-key"

_SCOPES = ("document", "corpus")


@dataclass(kw_only=True, frozen=True)
class PiiConfig(StageConfig):
    """Configuration of the ``pii`` stage.

    ``types``: which detectors run (default: all of :data:`PII_TYPES`).
    ``policy``: what every enabled type becomes – ``placeholder`` (``<EMAIL>``),
    ``pseudonym`` (a consistent fake of the same shape) or ``remove``.
    ``policies``: per-type overrides of ``policy`` (``{email: pseudonym}``).
    ``placeholders``: per-type overrides of the placeholder text.
    ``key``: the HMAC key pseudonyms derive from (same key, same output).
    ``pseudonym_scope``: ``document`` (same value, same fake within a document;
    different across documents) or ``corpus`` (same fake everywhere).
    ``scrub_private_ip``: also scrub private, loopback and link-local addresses
    (default: kept; they identify nobody outside their network).
    """

    types: tuple[str, ...] = PII_TYPES
    policy: str = "placeholder"
    policies: dict[str, str] = field(default_factory=dict)
    placeholders: dict[str, str] = field(default_factory=dict)
    key: str = DEFAULT_KEY
    pseudonym_scope: str = "document"
    scrub_private_ip: bool = False

    def __post_init__(self) -> None:
        valid = ", ".join(PII_TYPES)
        if isinstance(self.types, str) or not all(isinstance(t, str) for t in self.types):
            raise SpecError(f"pii.types must be a list of type names (any of: {valid}); got {self.types!r}")
        types = tuple(dict.fromkeys(self.types))
        unknown = [t for t in types if t not in PII_TYPES]
        if unknown:
            raise SpecError(f"pii.types: unknown type(s) {unknown}; valid types are: {valid}")
        if not types:
            raise SpecError(f"pii.types is empty: list at least one of {valid}, or leave the stage out of the job")
        object.__setattr__(self, "types", types)
        if self.policy not in POLICIES:
            raise SpecError(f"pii.policy: {self.policy!r} is not a policy; use one of {list(POLICIES)}")
        if not isinstance(self.policies, Mapping):
            raise SpecError(f"pii.policies must map a type to a policy, e.g. {{email: pseudonym}}; got {self.policies!r}")
        for t, p in self.policies.items():
            if t not in PII_TYPES:
                raise SpecError(f"pii.policies: unknown type {t!r}; valid types are: {valid}")
            if p not in POLICIES:
                raise SpecError(f"pii.policies.{t}: {p!r} is not a policy; use one of {list(POLICIES)}")
        object.__setattr__(self, "policies", dict(self.policies))
        if not isinstance(self.placeholders, Mapping):
            raise SpecError(f"pii.placeholders must map a type to its text, e.g. {{email: '[EMAIL]'}}; got {self.placeholders!r}")
        probe = Detector(PII_TYPES, scrub_private_ip=True)
        for t, text in self.placeholders.items():
            if t not in PII_TYPES:
                raise SpecError(f"pii.placeholders: unknown type {t!r}; valid types are: {valid}")
            if not isinstance(text, str):
                raise SpecError(f"pii.placeholders.{t} must be a string; got {text!r}")
            if probe.find(text):
                raise SpecError(f"pii.placeholders.{t}: {text!r} is itself detected as PII, so scrubbing would not "
                                "be idempotent; use a bracketed name like '<EMAIL>'")
        object.__setattr__(self, "placeholders", dict(self.placeholders))
        if not isinstance(self.key, str) or not self.key:
            raise SpecError("pii.key must be a non-empty string (the secret pseudonyms are derived from)")
        if self.pseudonym_scope not in _SCOPES:
            raise SpecError(f"pii.pseudonym_scope: {self.pseudonym_scope!r}; use 'document' or 'corpus'")
        if not isinstance(self.scrub_private_ip, bool):
            raise SpecError(f"pii.scrub_private_ip must be true or false; got {self.scrub_private_ip!r}")
        if self.key == DEFAULT_KEY and "pseudonym" in self.policy_by_type().values():
            logger.warning("pii: pseudonyms use the built-in default key; set pii.key to a secret of your own")

    def policy_by_type(self) -> dict[str, str]:
        """The effective policy of every enabled type."""
        return {t: self.policies.get(t, self.policy) for t in self.types}


class PiiStage(FormatterStage):
    """Scrubs e-mail addresses, public IPs, phone numbers, payment cards, IBANs, US
    SSNs and secrets (cloud and API keys, private key blocks, JWTs, passwords in URLs
    and connection strings) from ``text``.

    Adds ``pii_counts`` (:data:`PII_COUNTS_TYPE`): per document, how many spans of
    each type were replaced. The same per-type totals go to the run report as the
    stage's change counters (one counter per enabled type, named after it).
    """

    name: ClassVar[str] = "pii"
    Config: ClassVar[type[StageConfig]] = PiiConfig
    reads: ClassVar[tuple[str, ...]] = (S.ID, S.TEXT)
    adds: ClassVar[Mapping[str, pa.DataType]] = {"pii_counts": PII_COUNTS_TYPE}

    def setup(self) -> None:
        """Build the detectors and the replacer once (per actor, or per split's task)."""
        cfg: PiiConfig = self.config  # type: ignore[assignment]
        self.detector = Detector(cfg.types, scrub_private_ip=cfg.scrub_private_ip)
        self.replacer = Replacer(policies=cfg.policy_by_type(), placeholders=cfg.placeholders,
                                 key=cfg.key, scope=cfg.pseudonym_scope)
        #: one RE2 pass for all gates; the per-family gates then run only on the hits
        self._any_gate = "|".join(f"(?:{p})" for p in self.detector.gates.values())

    def scrub_text(self, text: str, doc_id: str = "") -> tuple[str, list[Span]]:
        """Scrub one string (the per-document path, for tools and tests)."""
        self.ensure_setup()
        spans = self.detector.find(text)
        return self.replacer.apply(text, spans, doc_id), spans

    def format(self, batch: pa.Table) -> tuple[Any, dict[str, np.ndarray], dict[str, pa.Array]]:
        texts = batch.column(S.TEXT).combine_chunks()
        n = len(texts)
        families = self.detector.families
        any_hit = pc.fill_null(pc.match_substring_regex(texts, self._any_gate), False)
        rows = np.flatnonzero(any_hit.to_numpy(zero_copy_only=False))
        counts = np.zeros((n, len(PII_TYPES)), dtype=np.int32)
        column = {t: i for i, t in enumerate(PII_TYPES)}
        new_texts = texts
        if len(rows):
            take = pa.array(rows)
            gated = texts.take(take)
            fired = np.zeros((len(rows), len(families)), dtype=bool)
            for k, fam in enumerate(families):
                hit = pc.fill_null(pc.match_substring_regex(gated, self.detector.gates[fam]), False)
                fired[:, k] = hit.to_numpy(zero_copy_only=False)
            sub_texts = gated.to_pylist()
            sub_ids = batch.column(S.ID).take(take).to_pylist()
            changed_rows: list[int] = []
            changed_texts: list[str] = []
            for j, (r, text, doc_id) in enumerate(zip(rows, sub_texts, sub_ids)):
                fams = [families[k] for k in np.flatnonzero(fired[j])]
                spans = self.detector.find(text, fams)
                if not spans:
                    continue
                for sp in spans:
                    counts[r, column[sp.type]] += 1
                changed_rows.append(int(r))
                changed_texts.append(self.replacer.apply(text, spans, doc_id or ""))
            if changed_rows:
                mask = np.zeros(n, dtype=bool)
                mask[changed_rows] = True
                new_texts = pc.replace_with_mask(texts, pa.array(mask), pa.array(changed_texts, pa.string()))
        enabled = set(self.detector.types)
        changes = {t: counts[:, column[t]] for t in PII_TYPES if t in enabled}
        fields = [
            pa.array(counts[:, i], pa.int32()) if t in enabled else pa.nulls(n, pa.int32())
            for i, t in enumerate(PII_TYPES)
        ]
        pii_counts = pa.StructArray.from_arrays(fields, fields=list(PII_COUNTS_TYPE))
        return new_texts, changes, {"pii_counts": pii_counts}
