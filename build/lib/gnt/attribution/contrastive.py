"""Contrastive attribution: where, in the input and in the target, a model's preference for neutral output lives.

For a row with a gendered reference (Ref-G) and one or more neutral references (Ref-N; mGeNTE's common set has
three), each reference is formatted as a grid answer and scored under the same prompt:

    d_k = log p(A_N,k | prompt) − log p(A_G | prompt)

with ``log p`` the sum of the answer tokens' log-probabilities (teacher forcing; the end-of-turn token is not
included, so answers of different lengths are compared on their content only).

**Labels.** By default (``labels="matching"``) A_N carries ``**NEUTRAL**`` and A_G ``**GENDERED**``: the
contrast is then between the two complete answers the grid considers correct for each reading, and the
target-side split shows how much of ``d`` the label carries and how much the translation. ``labels="NEUTRAL"``
or ``"GENDERED"`` gives both answers the same label, which isolates the translation's form (the label tokens then
contribute exactly 0 to ``d``).

**Input side.** ``d_k`` is attributed to the prompt tokens by gradient × input on the prompt embeddings (signed:
positive pushes towards the neutral answer). Each reference pair gets its own copy of the prompt embeddings as
a gradient leaf, so one forward over the 2K sequences and one backward of ``Σ_k d_k`` give every pair its own
attribution. Scores (``|e·∇d|``) are max-normalised and aggregated per part like the S_L/S_T targets.

**Target side** (the simplest honest version): the per-token log-probabilities of both answers are reported, and
the two token sequences are aligned (``difflib`` opcodes over token strings). ``d_k`` then decomposes exactly
into the contributions of aligned blocks: shared tokens (same token in both answers, conditioned on different
prefixes) and divergent spans (e.g. ``I cittadini`` vs ``La cittadinanza``), and into answer segments (label,
translation, format). That is the span-level view of where neutrality is decided.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from gnt.attribution.gradxinput import PassCounter, forward_logits, model_device
from gnt.attribution.ranking import part_stats, rank, top_tokens
from gnt.attribution.spans import (
    FORMAT_PART,
    LABEL_PART,
    TRANSLATION_PART,
    AttributionInput,
    build_input,
    output_spans,
)
from gnt.output_format import format_output
from gnt.prompts.grid import GridPrompt

LABEL_MODES: tuple[str, ...] = ("matching", "NEUTRAL", "GENDERED")
SEGMENTS: tuple[str, ...] = (LABEL_PART, TRANSLATION_PART, FORMAT_PART)


@dataclass(frozen=True)
class Answer:
    """A formatted answer, tokenised on its own, with each token's segment (label / translation / format)."""

    text: str
    ids: list[int]
    tokens: list[str]
    segments: list[str]


def answer_labels(mode: str) -> tuple[str, str]:
    """(label of the neutral answer, label of the gendered answer) for a label mode."""
    if mode == "matching":
        return "NEUTRAL", "GENDERED"
    if mode in ("NEUTRAL", "GENDERED"):
        return mode, mode
    raise ValueError(f"unknown label mode {mode!r}; expected one of {LABEL_MODES}")


def tokenise_answer(tokenizer, lang: str, label: str, translation: str) -> Answer:
    text = format_output(lang, label, translation)
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    spans = output_spans(text, lang)
    segments = []
    for start, end in encoding["offset_mapping"]:
        segment = FORMAT_PART
        for name, span in ((LABEL_PART, spans.label), (TRANSLATION_PART, spans.translation)):
            if span is not None and min(end, span[1]) > max(start, span[0]):
                segment = name
                break
        segments.append(segment)
    tokens = [text[a:b] for a, b in encoding["offset_mapping"]]
    return Answer(text, list(encoding["input_ids"]), tokens, segments)


def align(answer_n: Answer, lp_n: Sequence[float], answer_g: Answer, lp_g: Sequence[float]) -> list[dict]:
    """Aligned blocks of the two answers with their log-probability difference; the deltas sum to ``d``."""
    matcher = difflib.SequenceMatcher(None, answer_n.tokens, answer_g.tokens, autojunk=False)
    blocks = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        segments = sorted(set(answer_n.segments[i1:i2]) | set(answer_g.segments[j1:j2]))
        blocks.append(
            {
                "op": op,
                "neutral_text": "".join(answer_n.tokens[i1:i2]),
                "gendered_text": "".join(answer_g.tokens[j1:j2]),
                "neutral_tokens": [i1, i2],
                "gendered_tokens": [j1, j2],
                "segments": segments,
                "delta": round(float(sum(lp_n[i1:i2]) - sum(lp_g[j1:j2])), 6),
            }
        )
    return blocks


def segment_deltas(answer_n: Answer, lp_n: Sequence[float], answer_g: Answer, lp_g: Sequence[float]) -> dict[str, float]:
    """``d`` split by answer segment (label, translation, format): Σ log p of the segment's tokens, N minus G."""
    out = {}
    for segment in SEGMENTS:
        n = sum(lp for lp, s in zip(lp_n, answer_n.segments, strict=True) if s == segment)
        g = sum(lp for lp, s in zip(lp_g, answer_g.segments, strict=True) if s == segment)
        out[segment] = round(float(n - g), 6)
    return out


def contrast_row(
    model,
    tokenizer,
    prompt: GridPrompt,
    lang: str,
    ref_g: str,
    refs_n: Sequence[str],
    *,
    labels: str = "matching",
    counter: PassCounter | None = None,
    n_top_tokens: int = 20,
) -> dict:
    """Attribute ``d_k`` for every neutral reference of one row: input parts, target tokens, aligned spans.

    One forward over the 2K forced sequences and one backward. Returns a JSON-ready dict (see module doc).
    """
    if not refs_n or not ref_g:
        raise ValueError("contrastive attribution needs a gendered reference and at least one neutral reference")
    label_n, label_g = answer_labels(labels)
    base = build_input(tokenizer, prompt, None)
    device = model_device(model)
    prompt_ids = torch.tensor(base.input_ids, dtype=torch.long, device=device)
    answer_g = tokenise_answer(tokenizer, lang, label_g, ref_g)
    answers_n = [tokenise_answer(tokenizer, lang, label_n, ref) for ref in refs_n]
    embed = model.get_input_embeddings()
    with torch.no_grad():
        prompt_embeds = embed(prompt_ids[None])[0]
    leaves = [prompt_embeds.detach().clone().requires_grad_(True) for _ in answers_n]
    sequences: list[tuple[torch.Tensor, list[int]]] = []
    for k, answer_n in enumerate(answers_n):
        for answer in (answer_n, answer_g):
            with torch.no_grad():
                answer_embeds = embed(torch.tensor(answer.ids, dtype=torch.long, device=device)[None])[0]
            sequences.append((torch.cat([leaves[k], answer_embeds.detach()], dim=0), answer.ids))
    width = max(s.shape[0] for s, _ in sequences)
    mask = torch.zeros((len(sequences), width), dtype=torch.long, device=device)
    for b, (seq, _) in enumerate(sequences):
        mask[b, : seq.shape[0]] = 1
    batch = torch.stack([torch.nn.functional.pad(s, (0, 0, 0, width - s.shape[0])) for s, _ in sequences])
    p_len = len(base.input_ids)
    positions = [p_len - 1 + t for _, ids in sequences for t in range(len(ids))]
    logits, column = forward_logits(model, batch, mask, positions)
    logprobs = torch.log_softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)
    per_token: list[torch.Tensor] = []
    for b, (_, ids) in enumerate(sequences):
        cols = torch.tensor([column[p_len - 1 + t] for t in range(len(ids))], device=device)
        per_token.append(logprobs[b, cols, torch.tensor(ids, device=device)])
    d = torch.stack([per_token[2 * k].sum() - per_token[2 * k + 1].sum() for k in range(len(answers_n))])
    grads = torch.autograd.grad(d.sum(), leaves)
    if counter is not None:
        counter.forwards += 1
        counter.backwards += 1
        counter.rows += 1
    ranked_positions = base.ranked("S_L")  # every prompt part, source included
    lp_g = per_token[1].detach().cpu().tolist()
    pairs = []
    for k, answer_n in enumerate(answers_n):
        relevance = (leaves[k].detach().float() * grads[k].float()).sum(-1).cpu().numpy()
        pairs.append(_pair_record(base, relevance, ranked_positions, answer_n, per_token[2 * k], answer_g, lp_g, float(d[k].detach()), n_top_tokens))
    return {
        "labels": labels,
        "neutral_label": label_n,
        "gendered_label": label_g,
        "gendered_answer": answer_g.text,
        "gendered_tokens": [{"token": t, "segment": s, "logprob": round(lp, 6)} for t, s, lp in zip(answer_g.tokens, answer_g.segments, lp_g, strict=True)],
        "logp_gendered": round(float(sum(lp_g)), 6),
        "pairs": pairs,
        "d_mean": round(float(d.detach().mean()), 6),
    }


def _pair_record(
    base: AttributionInput,
    relevance: np.ndarray,
    ranked_positions: list[int],
    answer_n: Answer,
    lp_n_tensor: torch.Tensor,
    answer_g: Answer,
    lp_g: list[float],
    d: float,
    n_top_tokens: int,
) -> dict:
    lp_n = lp_n_tensor.detach().cpu().tolist()
    ranked = rank(base, relevance, ranked_positions)
    signed: dict[str, dict[str, float]] = {"parts": {}, "groups": {}}
    total_abs = float(np.abs(relevance[ranked_positions]).sum()) or 1.0
    for p in ranked_positions:
        name = base.token_parts[p] or ""
        group = base.parts[name].group
        for level, key in (("parts", name), ("groups", group)):
            signed[level][key] = signed[level].get(key, 0.0) + float(relevance[p])
    blocks = align(answer_n, lp_n, answer_g, lp_g)
    divergent = sum(b["delta"] for b in blocks if b["op"] != "equal")
    return {
        "neutral_answer": answer_n.text,
        "d": round(d, 6),
        "logp_neutral": round(float(sum(lp_n)), 6),
        "relevance_sum": round(float(relevance.sum()), 6),
        "parts": {n: s.to_json() for n, s in part_stats(ranked, "part").items()},
        "groups": {n: s.to_json() for n, s in part_stats(ranked, "group").items()},
        "signed_parts": {n: round(v, 6) for n, v in signed["parts"].items()},
        "signed_share_parts": {n: round(v / total_abs, 6) for n, v in signed["parts"].items()},
        "signed_share_groups": {n: round(v / total_abs, 6) for n, v in signed["groups"].items()},
        "top_tokens": top_tokens(ranked, n_top_tokens),
        "n_ranked": len(ranked_positions),
        "neutral_tokens": [
            {"token": t, "segment": s, "logprob": round(lp, 6)} for t, s, lp in zip(answer_n.tokens, answer_n.segments, lp_n, strict=True)
        ],
        "segment_deltas": segment_deltas(answer_n, lp_n, answer_g, lp_g),
        "aligned_blocks": blocks,
        "divergent_delta": round(divergent, 6),
        "shared_delta": round(d - divergent, 6),
    }


def contrast_aggregate(records: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """Tidy tables over rows × reference pairs: input groups/parts and target-side deltas.

    Input table columns: level, part, lang, set, mean_signed_share (mean of the part's signed relevance over the
    row's total |relevance|), mean_score, top10_rate, n. Target table: lang, set, component, mean_delta, n, where
    component is d, label / translation / output_format (segments), divergent / shared (alignment).
    """
    inputs: dict[tuple, list[float]] = {}
    targets: dict[tuple, list[float]] = {}
    for record in records:
        for set_name in (record["set"], "all"):
            for pair in record["pairs"]:
                for level, stats_key, signed_key in (("part", "parts", "signed_share_parts"), ("group", "groups", "signed_share_groups")):
                    for name, stat in pair[stats_key].items():
                        acc = inputs.setdefault((level, name, record["lang"], set_name), [0.0, 0.0, 0.0, 0])
                        acc[0] += pair[signed_key].get(name, 0.0)
                        acc[1] += stat["mean"]
                        acc[2] += 1.0 if stat["in_top10"] else 0.0
                        acc[3] += 1
                components = {"d": pair["d"], "divergent": pair["divergent_delta"], "shared": pair["shared_delta"], **pair["segment_deltas"]}
                for name, value in components.items():
                    acc = targets.setdefault((record["lang"], set_name, name), [0.0, 0.0, 0])
                    acc[0] += value
                    acc[1] += value * value
                    acc[2] += 1
    input_rows = [
        {"level": k[0], "part": k[1], "lang": k[2], "set": k[3], "mean_signed_share": round(v[0] / v[3], 6),
         "mean_score": round(v[1] / v[3], 6), "top10_rate": round(v[2] / v[3], 6), "n": int(v[3])}
        for k, v in sorted(inputs.items())
    ]
    target_rows = []
    for (lang, set_name, name), (total, squares, n) in sorted(targets.items()):
        mean = total / n
        var = max(0.0, squares / n - mean * mean)
        sem = (var / (n - 1)) ** 0.5 if n > 1 else 0.0
        target_rows.append({"lang": lang, "set": set_name, "component": name, "mean_delta": round(mean, 6), "sem": round(sem, 6), "n": n})
    return input_rows, target_rows
