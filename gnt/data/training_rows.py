"""Entries → TRL training rows: conversational prompt–completion (SFT) and preference pairs (DPO).

Prompts come from the same :class:`~gnt.prompts.grid.PromptGrid` the evaluator uses, with a cell drawn per entry
(seeded) across all configurations and shot counts, so a model is trained for the whole grid. Rows keep the
system turn; :func:`gnt.prompts.grid.fit_messages` adapts them to templates without a system role at train time.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from gnt.data.entry import Entry
from gnt.output_format import format_output
from gnt.prompts.grid import CONFIGS, SHOT_COUNTS, Cell, PromptGrid

DPO_KINDS = (
    "setn_neutral_vs_gendered", "label_coherence", "setg_gendered_vs_neutral", "templated_ambiguous", "label_decision",
)
ONPOLICY = "onpolicy"
"""The kind of a pair of the policy's own samples (written by on-policy alignment, gnt.alignment.onpolicy)."""
PAIR_KINDS = (*DPO_KINDS, ONPOLICY)
"""Every kind of preference pair a DPO run can select with ``pair_kinds``."""


def cell_for(
    entry: Entry, seed: int, configs: Sequence[str] = CONFIGS, shots: Sequence[int] = SHOT_COUNTS
) -> Cell:
    """The grid cell an entry's training prompt is rendered in (seeded, uniform over ``configs`` × ``shots``).

    The default is the whole grid. A smaller set (e.g. the zero-shot cells without guidelines) trains on the short
    prompts only: on a CPU a 4-shot prompt with guidelines is five times longer than a zero-shot one, and the
    training cost follows the prompt length.
    """
    rng = random.Random(f"gnt-cell|{seed}|{entry.lang}|{entry.id}")
    return Cell(entry.lang, rng.choice(tuple(configs)), rng.choice(tuple(shots)))


def _assistant(lang: str, label: str, text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": format_output(lang, label, text)}]


@dataclass(frozen=True)
class TrainingPrompts:
    """How training prompts are rendered: the grid, the seed that draws each entry's cell, and the cells drawn from
    (``configs`` × ``shots``; default the whole grid)."""

    grid: PromptGrid
    seed: int = 0
    configs: Sequence[str] = CONFIGS
    shots: Sequence[int] = SHOT_COUNTS

    def rendered(self, entries: Iterable[Entry]) -> Iterator[tuple[Entry, Cell, list[dict[str, str]]]]:
        """Each entry with its cell and the prompt rendered there: SFT and DPO rows of an entry share one prompt, so
        a model is taught the target and the preference under the very same turns."""
        for entry in entries:
            cell = cell_for(entry, self.seed, self.configs, self.shots)
            yield entry, cell, self.grid.render(entry.source, cell).as_messages()


def _meta(entry: Entry, cell: Cell) -> dict:
    return {
        "id": entry.id,
        "lang": entry.lang,
        "set": entry.set,
        "origin": entry.origin,
        "cell": cell.name,
        "source_key": entry.source_key,
    }


def sft_rows(entries: Iterable[Entry], prompts: TrainingPrompts) -> Iterator[dict]:
    """One row per (entry, valid target): Set-G → GENDERED + Ref-G; Set-N → NEUTRAL + each Ref-N alternative."""
    for entry, cell, prompt in prompts.rendered(entries):
        targets = [("GENDERED", entry.ref_g)] if entry.set == "Set-G" else [("NEUTRAL", ref) for ref in entry.ref_n]
        for number, (label, reference) in enumerate(targets):
            yield {
                "prompt": prompt,
                "completion": _assistant(entry.lang, label, reference),
                **_meta(entry, cell),
                "target": f"ref_n{number}" if label == "NEUTRAL" else "ref_g",
            }


def dpo_rows(entries: Iterable[Entry], prompts: TrainingPrompts, kinds: Iterable[str] = DPO_KINDS) -> Iterator[dict]:
    """Preference pairs of the requested kinds (see :data:`DPO_KINDS`), all sharing the entry's training prompt.

    - ``setn_neutral_vs_gendered``: Set-N, NEUTRAL + Ref-N over GENDERED + Ref-G;
    - ``label_coherence``: Set-N, both labelled NEUTRAL, Ref-N over Ref-G — the paper's main failure (the model
      says NEUTRAL and still writes gendered text);
    - ``setg_gendered_vs_neutral``: Set-G, GENDERED + Ref-G over NEUTRAL + Ref-N (keeps gender where it is stated);
    - ``templated_ambiguous``: templated ambiguous inputs, NEUTRAL + neutral target over GENDERED + masculine default;
    - ``label_decision``: every entry, the correct label over the wrong one with the *same* (correct) translation,
      so the label is the only difference: the recognition decision alone, without the translation's confound.
    """
    kinds = set(kinds)
    unknown = kinds - set(DPO_KINDS)
    if unknown:
        raise ValueError(f"unknown DPO kind(s) {sorted(unknown)}; valid: {', '.join(DPO_KINDS)}")
    for entry, cell, prompt in prompts.rendered(entries):
        lang, neutral, gendered = entry.lang, entry.ref_n[0], entry.ref_g
        pairs: list[tuple[str, tuple[str, str], tuple[str, str]]] = []
        if entry.origin == "templated":
            if entry.set == "Set-N":
                pairs.append(("templated_ambiguous", ("NEUTRAL", neutral), ("GENDERED", gendered)))
        elif entry.set == "Set-N":
            pairs.append(("setn_neutral_vs_gendered", ("NEUTRAL", neutral), ("GENDERED", gendered)))
            pairs.append(("label_coherence", ("NEUTRAL", neutral), ("NEUTRAL", gendered)))
        else:
            pairs.append(("setg_gendered_vs_neutral", ("GENDERED", gendered), ("NEUTRAL", neutral)))
        if entry.set == "Set-N":
            pairs.append(("label_decision", ("NEUTRAL", neutral), ("GENDERED", neutral)))
        else:
            pairs.append(("label_decision", ("GENDERED", gendered), ("NEUTRAL", gendered)))
        for kind, chosen, rejected in pairs:
            if kind not in kinds or chosen == rejected:
                continue
            yield {
                "prompt": prompt,
                "chosen": _assistant(lang, *chosen),
                "rejected": _assistant(lang, *rejected),
                "kind": kind,
                **_meta(entry, cell),
            }
