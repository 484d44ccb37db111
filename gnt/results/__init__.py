"""The results folder: its layout, the names and shapes of its files, and the model folders it holds.

Every step of an evaluation writes into one results folder and every later step reads from it; this package is
where they agree on what is there: :mod:`gnt.results.folder` (which model folders a step works on),
:mod:`gnt.results.model_folder` (the one writer and reader of a model folder: its parts, composed on reading),
:mod:`gnt.results.part` (a part's files and its record, which vouches for their sizes and hashes),
:mod:`gnt.results.shape` (a JSON value checked against its declared ``TypedDict``) and :mod:`gnt.results.step`
(what a step of the pipeline is).
"""
