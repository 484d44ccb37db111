"""Context attribution: token→part mapping, score correctness, ranking/aggregation, AttnLRP (tiny model, CPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from gnt.attribution.aggregate import aggregate, select
from gnt.attribution.gradxinput import PassCounter, explain_batch, freeze, length_batches
from gnt.attribution.ranking import RankedScores, part_stats, rank
from gnt.attribution.spans import (
    FORMAT_PART,
    LABEL_PART,
    TRANSLATION_PART,
    AttributionInput,
    PartInfo,
    build_input,
    output_spans,
)
from gnt.output_format import extract, format_output
from gnt.prompts.chat import locate_parts, render_prompt_text
from gnt.prompts.grid import CONFIGS, SHOT_COUNTS, Cell, PromptGrid

SHORT_COMMON = """\
system: |
  You translate English into {lang_name}.
preamble: |
  Label the sentence GENDERED or NEUTRAL, then translate it: <{lang}> **LABEL** [translation]
"""
SHORT_LANG = """\
guidelines: |
  Use neutral nouns such as "la cittadinanza".
demonstrations:
  - set: Set-G
    gender: F
    source: "Mrs Haug is tired."
    translation: "La signora Haug è stanca."
  - set: Set-G
    gender: M
    source: "He is tired."
    translation: "Lui è stanco."
  - set: Set-N
    source: "The citizens are tired."
    translation: "La cittadinanza è stanca."
  - set: Set-N
    source: "The teachers agreed."
    translation: "Il personale docente ha deciso."
"""


def write_short_prompts(directory: Path, langs: tuple[str, ...] = ("it",)) -> Path:
    """Short prompt texts in the project's layout: real structure, ~150 tokens, so model tests stay fast."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "common.yaml").write_text(SHORT_COMMON, encoding="utf-8")
    for lang in langs:
        (directory / f"{lang}.yaml").write_text(SHORT_LANG, encoding="utf-8")
    return directory


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="module")
def short_grid(tmp_path_factory: pytest.TempPathFactory) -> PromptGrid:
    return PromptGrid(("it",), write_short_prompts(tmp_path_factory.mktemp("prompts")), seed=0)


def _load(tiny_model_dir: Path, dtype=torch.float32, attn: str | None = None):
    from transformers import AutoModelForCausalLM

    kwargs = {"dtype": dtype}
    if attn:
        kwargs["attn_implementation"] = attn
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, **kwargs)
    freeze(model)
    return model


# ------------------------------------------------------------------------------------------------------------------
# Token → part mapping
# ------------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("system_role", [True, False])
def test_part_spans_on_every_configuration(tokenizer, system_role: bool) -> None:
    """On the project's real prompts, every token of a part lies inside that part, every part is covered by its
    tokens, tokens outside parts are chat-template text, and no token straddles two parts."""
    grid = PromptGrid()
    source = "The members of the committee said that they were tired."
    for lang in grid.langs:
        for config in CONFIGS:
            for shots in SHOT_COUNTS:
                prompt = grid.render(source, Cell(lang, config, shots), system_role=system_role)
                inp = build_input(tokenizer, prompt, None)
                text = render_prompt_text(tokenizer, prompt.as_messages())
                located = {lp.part.name: lp for lp in locate_parts(text, prompt)}
                assert inp.straddles == 0
                assert set(inp.parts) == set(located)
                covered: dict[str, set[int]] = {name: set() for name in located}
                template: list[str] = []
                for index, name in enumerate(inp.token_parts):
                    start, end = inp.offsets[index]
                    piece = text[start:end]
                    if name is None:  # chat-template text: outside every part
                        assert not any(min(end, lp.end) > max(start, lp.start) for lp in located.values()), piece
                        template.append(piece)
                        continue
                    span = located[name]
                    core = piece.strip() or piece
                    core_start = start + piece.index(core)
                    assert span.start <= core_start and core_start + len(core) <= span.end, (name, piece)
                    decoded = tokenizer.decode([inp.input_ids[index]])
                    if "\ufffd" not in decoded:  # a byte-fragment token decodes to the replacement char
                        assert decoded.strip() in prompt.part_text(span.part), (name, decoded)
                    covered[name].update(range(start, end))
                spans = sorted((lp.start, lp.end) for lp in located.values())
                bounds = [0] + [x for span in spans for x in span] + [len(text)]
                skeleton = "".join(text[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2))
                assert "".join("".join(template).split()) == "".join(skeleton.split())
                for name, span in located.items():
                    missing = [i for i in range(span.start, span.end) if i not in covered[name]]
                    assert not missing, (lang, config, shots, name, text[missing[0] : missing[0] + 10])
                expected = {"preamble", "source"} | ({"system"} if config in ("G+S", "S") else set())
                expected |= {"guidelines"} if config in ("G+S", "G") else set()
                expected |= {f"shot{n}_{r}" for n in range(1, shots + 1) for r in ("user", "assistant")}
                assert set(located) == expected


RAW_OUTPUTS = [
    "<it> **NEUTRAL** [La cittadinanza è stanca.]",
    "<it> **GENDERED** [La relazione [A6-0123/2009] della signora Lulling è approvata.]",
    "<it>  ** NEUTRAL ** [  Chi lavora qui conosce le regole.  ] extra",
    "<es> **GENDERED** [Ella está cansada.]",
    "<it> **NEUTRAL** [unterminated",
    "<it> **NEUTRAL** no bracket",
    "no label at all",
    "",
]


@pytest.mark.parametrize("raw", RAW_OUTPUTS)
def test_output_spans_agree_with_extraction(raw: str) -> None:
    spans = output_spans(raw, "it")
    result = extract(raw, "it")
    assert (raw[slice(*spans.label)] if spans.label else None) == result.label
    if result.error in (None, "wrong_lang_tag"):
        assert raw[slice(*spans.translation)] == result.translation
    else:
        assert spans.translation is None


def test_targets_are_the_label_and_translation_tokens(tokenizer, short_grid: PromptGrid) -> None:
    prompt = short_grid.render("The voters are tired.", Cell("it", "G+S", 4))
    raw = format_output("it", "NEUTRAL", "L'elettorato è stanco.")
    inp = build_input(tokenizer, prompt, raw)
    label = "".join(inp.token_text(j) for j in inp.targets["S_L"])
    translation = "".join(inp.token_text(j) for j in inp.targets["S_T"])
    assert label.strip() == "NEUTRAL"
    assert translation.strip().rstrip("]") == "L'elettorato è stanco."
    assert all(j >= inp.prompt_len for j in inp.targets["S_L"] + inp.targets["S_T"])
    assert {inp.token_parts[j] for j in inp.targets["S_L"]} == {LABEL_PART}
    assert {inp.token_parts[j] for j in inp.targets["S_T"]} == {TRANSLATION_PART}
    assert FORMAT_PART in inp.token_parts  # tag, asterisks, brackets
    # S_L ranks prompt parts only; S_T ranks the label too but never the source.
    ranked_l = {inp.token_parts[i] for i in inp.ranked("S_L")}
    ranked_t = {inp.token_parts[i] for i in inp.ranked("S_T")}
    assert "source" in ranked_l and LABEL_PART not in ranked_l
    assert "source" not in ranked_t and LABEL_PART in ranked_t
    assert None not in ranked_l | ranked_t and FORMAT_PART not in ranked_l | ranked_t


# ------------------------------------------------------------------------------------------------------------------
# Scores equal an independent computation
# ------------------------------------------------------------------------------------------------------------------


def _independent_objective(model, inp: AttributionInput, target: str):
    """F(E) = Σ_j logit_j computed with a plain full forward (no batching, no logits_to_keep)."""
    ids = torch.tensor(inp.input_ids)
    positions = inp.targets[target]

    def objective(embeds: torch.Tensor) -> torch.Tensor:
        logits = model(inputs_embeds=embeds[None], use_cache=False).logits[0]
        return sum(logits[j - 1, ids[j]] for j in positions)

    with torch.no_grad():
        embeds = model.get_input_embeddings()(ids[None])[0].clone()
    return objective, embeds


def _rms_norm_fp64(self, hidden_states: torch.Tensor) -> torch.Tensor:
    """Qwen2RMSNorm without its float32 round trip, so finite differences in float64 are exact to ~1e-9."""
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    return self.weight * (hidden_states * torch.rsqrt(variance + self.variance_epsilon))


def test_scores_equal_jacobian_and_finite_differences(
    tiny_model_dir: Path, tokenizer, short_grid: PromptGrid, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers.models.qwen2 import modeling_qwen2

    monkeypatch.setattr(modeling_qwen2.Qwen2RMSNorm, "forward", _rms_norm_fp64)
    model = _load(tiny_model_dir, torch.float64)
    prompt = short_grid.render("The voters are tired.", Cell("it", "G+S", 2))
    inp = build_input(tokenizer, prompt, format_output("it", "NEUTRAL", "L'elettorato è stanco."))
    counter = PassCounter()
    (result,) = explain_batch(model, [inp], counter=counter)
    assert (counter.forwards, counter.backwards) == (1, 2)  # one forward, one backward per span
    for target in ("S_L", "S_T"):
        objective, embeds = _independent_objective(model, inp, target)
        jacobian = torch.autograd.functional.jacobian(objective, embeds)
        expected = (embeds * jacobian).sum(-1).numpy()
        np.testing.assert_allclose(result[target].relevance, expected, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(result[target].target_logit, float(objective(embeds)), rtol=1e-9)
        # finite differences along e_i itself: d/dt F(E + t·e_i at row i) = e_i · ∂F/∂e_i
        for i in [0, 5, inp.prompt_len // 2, inp.prompt_len - 1, inp.targets[target][0] - 1]:
            h = 1e-5
            bump = torch.zeros_like(embeds)
            bump[i] = embeds[i]
            with torch.no_grad():
                fd = (objective(embeds + h * bump) - objective(embeds - h * bump)) / (2 * h)
            assert abs(float(fd) - result[target].relevance[i]) <= 1e-6 * max(1.0, abs(float(fd))), (target, i)
        # tokens after the last target token cannot influence it
        last = max(inp.targets[target])
        assert np.all(result[target].relevance[last:] == 0)


def test_batched_rows_score_like_single_rows(tiny_model_dir: Path, tokenizer, short_grid: PromptGrid) -> None:
    model = _load(tiny_model_dir)
    rows = [
        ("The voters are tired.", "NEUTRAL", "L'elettorato è stanco."),
        ("She said that the long meeting had been useful for everyone.", "GENDERED", "Ha detto che la lunga riunione è stata utile."),
        ("They agreed.", "NEUTRAL", "Hanno deciso."),
    ]
    inputs = [
        build_input(tokenizer, short_grid.render(src, Cell("it", cfg, 4)), format_output("it", label, tr))
        for (src, label, tr), cfg in zip(rows, ("G+S", "None", "G"), strict=True)
    ]
    assert len({len(x) for x in inputs}) == 3
    batched = explain_batch(model, inputs)
    for inp, together in zip(inputs, batched, strict=True):
        (alone,) = explain_batch(model, [inp])
        for target in ("S_L", "S_T"):
            np.testing.assert_allclose(together[target].relevance, alone[target].relevance, rtol=1e-4, atol=1e-6)
            assert abs(together[target].target_logit - alone[target].target_logit) < 1e-4


def test_length_batches_group_similar_lengths() -> None:
    lengths = [10, 500, 12, 480, 11, 490]
    batches = length_batches(lengths, batch_size=3)
    assert batches == [[1, 5, 3], [2, 4, 0]]
    assert length_batches(lengths, batch_size=8, max_batch_tokens=1000) == [[1, 5], [3, 2], [4, 0]]


# ------------------------------------------------------------------------------------------------------------------
# Ranking and aggregation on a hand-built fixture
# ------------------------------------------------------------------------------------------------------------------


def _stub_input(parts: list[str | None]) -> AttributionInput:
    """A hand-built input: one character per token, part names as given (None = template)."""
    text = "".join("abcdefghijklmnopqrstuvwxyz"[i % 26] for i in range(len(parts)))
    infos = {
        "system": PartInfo("system", "system", "system"),
        "preamble": PartInfo("preamble", "preamble", "preamble"),
        "shot1_user": PartInfo("shot1_user", "shot_user", "shot_gendered_user", 1, "gendered"),
        "shot2_user": PartInfo("shot2_user", "shot_user", "shot_gendered_user", 2, "gendered"),
        "source": PartInfo("source", "source", "source"),
    }
    return AttributionInput("r", list(range(len(parts))), [(i, i + 1) for i in range(len(parts))], parts, infos, len(parts), text)


def test_ranking_normalises_over_ranked_tokens_and_counts_top10() -> None:
    parts = [None, "system", "system", "system", "preamble", "preamble", "preamble", "preamble", "preamble",
             "shot1_user", "shot2_user", "source", "source", None]
    inp = _stub_input(parts)
    relevance = np.array([99.0, -10, 9, 8, 7, -6, 5, 4, 3, 2, 1, 0.5, 0.25, 50.0])  # template tokens are huge
    ranked = rank(inp, relevance, inp.ranked("S_L"))
    assert ranked.raw_max == 10.0 and ranked.scores.max() == 1.0
    np.testing.assert_allclose(ranked.scores, [1, .9, .8, .7, .6, .5, .4, .3, .2, .1, .05, .025])
    stats = part_stats(ranked, "part")
    assert stats["system"].in_top10 and stats["system"].top10_count == 3
    assert stats["preamble"].top10_count == 5 and stats["preamble"].mean == pytest.approx(0.5)
    assert stats["shot2_user"].in_top10 and stats["shot2_user"].top10_count == 1  # rank 10 of 12
    assert not stats["source"].in_top10 and stats["source"].mean == pytest.approx(0.0375)
    assert sum(s.share for s in stats.values()) == pytest.approx(1.0)
    groups = part_stats(ranked, "group")
    assert groups["shot_gendered_user"].n_tokens == 2 and groups["shot_gendered_user"].mean == pytest.approx(0.15)
    assert groups["shot_gendered_user"].top10_count == 2


def _record(set_name: str, label: str, stats: dict[str, tuple[bool, int, float, float]], target: str = "S_L") -> dict:
    parts = {n: {"in_top10": t, "top10_count": c, "mean": m, "share": s, "n_tokens": 1, "max": m} for n, (t, c, m, s) in stats.items()}
    return {"id": set_name + label, "lang": "it", "set": set_name, "target": target, "n_ranked": 40,
            "outcomes": {"label": label, "judged": None}, "parts": parts, "groups": parts}


def test_aggregate_top10_rates_and_means_by_hand() -> None:
    records = [
        _record("Set-N", "correct_label", {"system": (True, 4, 0.5, 0.4), "source": (False, 0, 0.1, 0.6)}),
        _record("Set-N", "wrong_label", {"system": (False, 0, 0.3, 0.2), "source": (True, 6, 0.7, 0.8)}),
        _record("Set-G", "correct_label", {"system": (True, 10, 0.9, 1.0)}),
    ]
    rows = aggregate(records, ("label", "judged"))
    (row,) = select(rows, level="part", part="system", set="Set-N", outcome_by="all")
    assert row["top10_rate"] == pytest.approx(0.5) and row["mean_score"] == pytest.approx(0.4) and row["n"] == 2
    assert row["top10_share"] == pytest.approx(0.2) and row["relevance_share"] == pytest.approx(0.3)
    (row,) = select(rows, level="part", part="system", set="all", outcome_by="all")
    assert row["top10_rate"] == pytest.approx(2 / 3) and row["mean_score"] == pytest.approx(1.7 / 3) and row["n"] == 3
    (row,) = select(rows, level="part", part="source", set="all", outcome_by="label", outcome="wrong_label")
    assert row["top10_rate"] == 1.0 and row["mean_score"] == pytest.approx(0.7) and row["n"] == 1
    (row,) = select(rows, level="part", part="system", set="all", outcome_by="label", outcome="correct_label")
    assert row["top10_rate"] == 1.0 and row["mean_score"] == pytest.approx(0.7) and row["n"] == 2
    assert not select(rows, outcome_by="judged")  # unknown outcomes are not a category
    assert not select(rows, part="source", set="Set-G")  # an absent part is absent, not zero


def test_top_ties_break_by_position() -> None:
    ranked = RankedScores(np.array([5, 3, 9]), np.array([1.0, 1.0, 0.5]), ("a", "b", "c"), ("a", "b", "c"), ("x", "y", "z"), 1.0)
    assert ranked.top(2).tolist() == [1, 0]


# ------------------------------------------------------------------------------------------------------------------
# AttnLRP through lxt
# ------------------------------------------------------------------------------------------------------------------


def _lxt_or_fail():
    from gnt.attribution.attnlrp import AttnLRPUnavailable, load_lxt_patches

    try:
        return load_lxt_patches()
    except AttnLRPUnavailable as exc:  # scripts/install.sh installs lxt 2.1: its absence is a broken install
        pytest.fail(f"AttnLRP unavailable although the project installs lxt: {exc}")


def test_attnlrp_conserves_relevance_through_mlp_and_norm_rules(tiny_model_dir: Path, tokenizer, short_grid: PromptGrid) -> None:
    """With attention outputs switched off (o_proj = 0) the network is embeddings → RMSNorm/MLP residual blocks →
    lm_head, where AttnLRP's rules are exactly conservative: Σ relevance = explained logit sum. Plain gradient × input
    is not (RMSNorm's variance and SiLU are non-linear), which shows the rules are active."""
    from gnt.attribution.attnlrp import attnlrp_patched

    _lxt_or_fail()
    model = _load(tiny_model_dir, torch.float64, attn="eager")
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
    inp = build_input(tokenizer, short_grid.render("The voters are tired.", Cell("it", "G+S", 2)),
                      format_output("it", "NEUTRAL", "L'elettorato è stanco."))
    with attnlrp_patched(model) as state:
        (lrp,) = explain_batch(model, [inp])
        state.require_attention()
    (plain,) = explain_batch(model, [inp])
    for target in ("S_L", "S_T"):
        assert lrp[target].relevance.sum() == pytest.approx(lrp[target].target_logit, rel=1e-6)  # lxt normalises in fp32
        assert abs(plain[target].relevance.sum() - plain[target].target_logit) > 1e-3 * abs(plain[target].target_logit)


def test_attnlrp_attention_rule_divides_query_key_value_gradients() -> None:
    from transformers.models.qwen2 import modeling_qwen2

    patches = _lxt_or_fail()
    wrapped = patches.wrap_attention_forward(modeling_qwen2.eager_attention_forward)

    class Stub(torch.nn.Module):
        num_key_value_groups = 1

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 5, 4, dtype=torch.float64, requires_grad=True) for _ in range(3))
    grads = []
    for fn in (modeling_qwen2.eager_attention_forward, wrapped):
        out, _ = fn(Stub().eval(), q, k, v, None, scaling=0.5)
        grads.append(torch.autograd.grad(out.sum(), (q, k, v)))
    for plain, lrp, factor in zip(grads[0], grads[1], (4, 4, 2), strict=True):
        torch.testing.assert_close(lrp, plain / factor)


def test_attnlrp_runs_on_tiny_qwen2_and_restores_the_model(tiny_model_dir: Path, tokenizer, short_grid: PromptGrid) -> None:
    from transformers.models.qwen2 import modeling_qwen2

    from gnt.attribution.attnlrp import attnlrp_patched

    _lxt_or_fail()
    model = _load(tiny_model_dir, attn="eager")
    originals = (modeling_qwen2.Qwen2MLP.forward, modeling_qwen2.Qwen2RMSNorm.forward, modeling_qwen2.eager_attention_forward)
    inp = build_input(tokenizer, short_grid.render("The voters are tired.", Cell("it", "G+S", 4)),
                      format_output("it", "NEUTRAL", "L'elettorato è stanco."))
    (before,) = explain_batch(model, [inp])
    with attnlrp_patched(model) as state:
        (lrp,) = explain_batch(model, [inp])
        assert state.attention_calls == model.config.num_hidden_layers
        with pytest.raises(RuntimeError, match="nested"), attnlrp_patched(model):
            pass
    (after,) = explain_batch(model, [inp])
    assert (modeling_qwen2.Qwen2MLP.forward, modeling_qwen2.Qwen2RMSNorm.forward, modeling_qwen2.eager_attention_forward) == originals
    for target in ("S_L", "S_T"):
        assert lrp[target].target_logit == pytest.approx(before[target].target_logit, rel=1e-5)  # forward unchanged
        assert np.isfinite(lrp[target].relevance).all()
        assert not np.allclose(lrp[target].relevance, before[target].relevance)
        np.testing.assert_allclose(after[target].relevance, before[target].relevance, rtol=1e-6)


def test_attnlrp_says_clearly_what_is_unsupported(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gnt.attribution import attnlrp

    model = _load(tiny_model_dir, attn="sdpa")
    with pytest.raises(attnlrp.AttnLRPUnavailable, match='attn_implementation="eager"'):
        attnlrp.check_support(model)
    model.config.model_type = "gpt_neox"
    with pytest.raises(attnlrp.AttnLRPUnavailable, match=r"gpt_neox.*lxt 2\.1.*llama, qwen2, qwen3.*gradxinput"):
        attnlrp.check_support(model)
    monkeypatch.setattr(attnlrp, "lxt_version", lambda: "3.0")
    monkeypatch.delitem(sys.modules, "lxt.efficient.patches", raising=False)
    with pytest.raises(attnlrp.AttnLRPUnavailable, match=r"lxt 3\.0 is installed.*verified only with lxt 2\.1"):
        attnlrp.load_lxt_patches()
    monkeypatch.setattr(attnlrp, "lxt_version", lambda: None)
    with pytest.raises(attnlrp.AttnLRPUnavailable, match=r"pip install --no-deps lxt==2\.1"):
        attnlrp.load_lxt_patches()
