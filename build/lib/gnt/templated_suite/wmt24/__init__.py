"""The published WMT24 test suite "Gender Resolution in Speaker-Listener Dialogue Roles" (Dawkins et al. 2024).

The suite's English dialogue segments are shipped inside the WMT24 ``txt-ts`` folder, beside the WMT24 systems'
outputs, never in this repository. :mod:`.reader` parses each segment into speakers, listeners and the referent of
every adjective, :mod:`.templates` names its template type as Dawkins et al. (2025) number them, and
:mod:`.stereotypes` reads the stereotype of its descriptors and adverbs; :mod:`.lexicon` loads the per-language
forms of the suite's adjectives; :mod:`.align` finds each slot's stretch of a translation and :mod:`.score`
classifies it (with :mod:`.predicate` for Spanish); :mod:`.tables` computes the paper's four tables with
bootstrap CIs, :mod:`.placement` places our models among the systems, :mod:`.moved` compares two runs item by
item; :mod:`.run` writes the files and :mod:`.plots` the figure.
"""
