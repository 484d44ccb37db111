"""Context attribution: which prompt parts drive the model's label and its translation (docs/attribution.md).

For one evaluated row the model's own output is forced after the rendered prompt and every input token gets a
score ``s(i) = |e_i · ∂(Σ_{j∈span} logit_j)/∂e_i|`` for two spans: the label (``S_L``) and the translation
(``S_T``). Tokens are mapped to the prompt builder's parts through character spans, scores are max-normalised per
row and aggregated per part. The modules, one concept each:

- :mod:`~gnt.attribution.spans`: the forced token sequence, each token's part, the target spans;
- :mod:`~gnt.attribution.gradxinput`: the batched forward/backward engine (gradient × input on embeddings);
- :mod:`~gnt.attribution.attnlrp`: the AttnLRP rules of ``lxt`` patched into supported architectures;
- :mod:`~gnt.attribution.ranking`: per-row normalisation, top tokens and per-part statistics;
- :mod:`~gnt.attribution.aggregate`: tidy per-part tables over rows (top-10 rate, mean score);
- :mod:`~gnt.attribution.contrastive`: log p(Ref-N answer) − log p(Ref-G answer), attributed to parts and tokens;
- :mod:`~gnt.attribution.results`: reading an evaluation result (generations, judgments, run record);
- :mod:`~gnt.attribution.loading`: model loading (device/dtype policy, eager attention for AttnLRP, adapters);
- :mod:`~gnt.attribution.plots`: PNG figures;
- :mod:`~gnt.attribution.config`: the keys of both runs (one shared group, each run's own keys);
- :mod:`~gnt.attribution.run`: an attribution run: row selection, explanation and the saved outputs;
- :mod:`~gnt.attribution.contrast_run`: a contrastive run;
- :mod:`~gnt.attribution.step`: attribution as a step of the evaluation pipeline.
"""

from gnt.attribution.spans import AttributionInput, build_input, output_spans

__all__ = ["AttributionInput", "build_input", "output_spans"]
