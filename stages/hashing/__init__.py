"""Hash structures shared by several stages: the radix index over sorted 64-bit hashes
(:mod:`.radix`), used by ``url_filter`` and decontamination's n-gram index."""
