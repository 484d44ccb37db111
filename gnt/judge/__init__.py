"""Judging translations for gender neutrality (docs/judge.md, docs/metrics.md), and measuring how far a judge can be trusted.

- :mod:`gnt.judge.schema`: the four formats (MONO-L, MONO-P+L, CROSS-L, CROSS-P+L), labels and JSON schemas;
- :mod:`gnt.judge.prompts`: system texts and exemplars (validated on load), and the chat turns built from them;
- :mod:`gnt.judge.llm_judge`: requests, parsing, retries, ``judge_error`` records and the judgment cache;
- :mod:`gnt.judge.lexical`: the offline lexical proxy judge;
- :mod:`gnt.judge.agreement`: accuracy, macro-F1, confusion matrix and Cohen's κ;
- :mod:`gnt.judge.validation`: accuracy on mGeNTE references and figures against a gold TSV;
- :mod:`gnt.judge.apply`: judge an evaluation results folder (its judgments and the judge's metrics, the judge's
  part of each model folder);
- :mod:`gnt.judge.config`: the judge recipe and backend construction (``eval/judge.py``).
"""
