"""Templated sensitivity suite (docs/templated-suite.md): does a model's translation *respond* to gender ambiguity?

The same English sentence is translated with the referent's gender stated (determined) and unstated (ambiguous);
the focus adjective's translation is classified M / F / N (and N into strategies N1..N5) by lexicon lookup
(:mod:`.classify`), and the shift between the two variants gives ΔM, ΔF, ΔN (:mod:`.metrics`). :mod:`.run` drives
generation for a base model and its checkpoints through the shared backends and cache; :mod:`.plots` draws the
report figures.
"""
