"""The evaluation core: checkpoint sweeps over the mGeNTE prompt grid, the generation cache, and grid metrics.

Modules, one concept each: ``config`` (the eval recipe), ``discovery`` (base + checkpoints), ``rows`` (which rows),
``leakage`` (training sources vs evaluated rows), ``cache`` (content-addressed generations), ``generation_records``
(one record per row × cell), ``metrics`` and ``bootstrap`` (docs/metrics.md: CIs and paired tests), ``results`` (the
output layout), ``table`` (the printed summary), ``driver`` (what every run over a list of models shares: one
backend per base model, the cache, chunks, counters, failed models, records last) and ``sweep``
(:func:`gnt.evaluation.sweep.run_sweep`, the grid plugged into the driver; ``shard`` splits it over workers).
"""
