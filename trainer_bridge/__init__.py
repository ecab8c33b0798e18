"""The trainer's side of the data contract.

Shard reader (:mod:`.shards`), mix manifests and the mix plan (:mod:`.mix`, :mod:`.order`),
the resumable loader (:mod:`.loader`) and the bundled FSDP2 + tensor-parallel trainer
(:mod:`.model`, :mod:`.parallelize`, :mod:`.train`, :mod:`.checkpoint`).

Importing this package does not import torch; the trainer modules do.
"""

from __future__ import annotations

__all__ = ["MixPlan", "MixSpec", "TokenStream", "load_mix", "resolve_mix"]


def __getattr__(name: str):  # lazy: keep `import trainer_bridge` cheap
    if name in {"MixPlan", "MixSpec", "load_mix", "resolve_mix"}:
        from trainer_bridge import mix

        return getattr(mix, name)
    if name == "TokenStream":
        from trainer_bridge.shards import TokenStream

        return TokenStream
    raise AttributeError(name)
