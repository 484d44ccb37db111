"""The published WMT24 test suite "Gender Resolution in Speaker-Listener Dialogue Roles" (Dawkins et al. 2024).

The suite's English dialogue segments are shipped inside the WMT24 ``txt-ts`` folder, beside the WMT24 systems'
outputs, never in this repository. :mod:`.reader` parses each segment into speakers, listeners and the referent of
every adjective; :mod:`.lexicon` loads the per-language forms of the suite's adjectives; :mod:`.score` classifies
each adjective of a translation with the templated suite's classifier and computes the summary tables with the
templated suite's bootstrap; :mod:`.translate` renders the segments for our own models through the sweep's backends
and cache; :mod:`.report` writes the files and the plot.
"""
