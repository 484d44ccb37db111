"""Templated ambiguous inputs: minimal pairs of English sources that differ only in whether a referent's gender is stated.

The suite follows the gender-dialogue design (docs/templated-suite.md): a *determined* input ("The woman smiled. 'I think I'm
stubborn,' she said.") and an *ambiguous* one ("'I think I'm stubborn,' I said.") share a focus adjective whose
translation shows (or hides) the referent's gender. The pairs serve two purposes:

* evaluation: :func:`write_suite` writes one JSONL line per input with the lexicon forms (M, F, N and the neutral
  strategy) so a later step can classify a model's translation of the adjective as M, F or N and compute ΔM, ΔF, ΔN;
* training: :func:`pairs_to_entries` turns each pair into a Set-G and a Set-N :class:`~gnt.data.entry.Entry`, whose
  neutral reference is an SFT target / DPO "chosen" and whose masculine-default reference is a DPO "rejected".

Everything is data-driven: the lexicons (``data/templates/lexicons/{lang}.tsv``) hold the adjective forms and the
templates (``data/templates/templates.yaml``) hold the English and target sentences with slots. ``data/templates/
README.md`` documents the slot syntax and the language choices (notably German, whose predicative adjectives do
not inflect). Both files are validated on load and every problem is reported as ``file:line:column: message``.

The package has one module per concern: :mod:`~gnt.data.templated.adjectives` (the lexicons),
:mod:`~gnt.data.templated.templates` (the templates and their rendering), :mod:`~gnt.data.templated.pairs` (pair
generation and training entries) and :mod:`~gnt.data.templated.suite` (the suite file); their names are
available here too.
"""

from gnt.data.templated.adjectives import *  # noqa: F403
from gnt.data.templated.pairs import *  # noqa: F403
from gnt.data.templated.suite import *  # noqa: F403
from gnt.data.templated.templates import *  # noqa: F403
