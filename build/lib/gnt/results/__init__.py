"""The results folder: its layout, the names and shapes of its files, and the model folders it holds.

Every step of an evaluation writes into one results folder and every later step reads from it; this package is
where they agree on what is there (:mod:`gnt.results.folder`: which model folders a step works on;
:mod:`gnt.results.step`: what a step of the pipeline is).
"""
