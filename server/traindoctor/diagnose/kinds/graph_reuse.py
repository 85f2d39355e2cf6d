"""Hooks of the `graph-reuse` kind (rules/signatures/*.yaml with kind: graph-reuse).

`refine`: a GAN step on the stack (the generator's output reused by the discriminator's backward).
"""

from __future__ import annotations

from . import Failure


def refine(failure: Failure) -> None:
    from .. import source

    if source.gan_step(failure.frames, source.user_sources(failure.frames, failure.base_dir)):
        failure.facts["gan"] = True
