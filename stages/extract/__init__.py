"""The ``extract`` stage (:mod:`.stage`): main text from HTML, through the extractors in
:mod:`.extractors` and the HTML helpers in :mod:`.html`."""

from stages.extract.stage import Extract, ExtractConfig

__all__ = ["Extract", "ExtractConfig"]
