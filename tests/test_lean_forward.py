"""The lean training forward: a shared prompt prefix computed once is exact, the LM head scores only labelled
positions on the CPU, and the grouped sampler gives one-cell batches that still cover every row once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import torch

from gnt.io import read_json
from gnt.training.lean_forward import (
    PromptGroupedSampler,
    score_labelled_positions_only,
    share_prompt_prefix,
    shared_prefix_length,
)


def _lora_model(model_dir: Path, dropout: float = 0.0):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="sdpa")
    torch.manual_seed(1)  # init_lora_weights=False: non-zero B, so the adapter changes the forward
    config = LoraConfig(r=8, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"], init_lora_weights=False,
                        lora_dropout=dropout)
    return get_peft_model(model, config)


def _batch(rows: int = 4, prefix: int = 40, suffix: int = 12, vocab: int = 200):
    generator = torch.Generator().manual_seed(0)
    ids = torch.cat([torch.randint(3, vocab, (1, prefix), generator=generator).expand(rows, -1),
                     torch.randint(3, vocab, (rows, suffix), generator=generator)], dim=1)
    mask = torch.ones_like(ids)
    mask[1, -3:] = 0  # right padding, as TRL's collator pads
    mask[2, -5:] = 0
    labels = ids.clone()
    labels[:, : prefix + 2] = -100
    labels[mask == 0] = -100
    return ids, mask, labels


def _loss_and_grads(model, ids, mask, labels):
    model.train()
    loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return loss.item(), grads


def test_shared_prefix_gives_the_loss_and_gradients_of_the_full_forward(tiny_model_dir: Path) -> None:
    ids, mask, labels = _batch()
    assert shared_prefix_length(ids, mask) == 40
    plain_loss, plain_grads = _loss_and_grads(_lora_model(tiny_model_dir), ids, mask, labels)

    model = _lora_model(tiny_model_dir)
    backbone = share_prompt_prefix(model)
    calls: list[tuple[int, int]] = []
    original = backbone.forward
    backbone.forward = lambda *a, **k: (calls.append(tuple(k["input_ids"].shape)), original(*a, **k))[1]
    shared_loss, shared_grads = _loss_and_grads(model, ids, mask, labels)

    assert calls == [(4, 52)]  # one backbone call from the model's point of view ...
    assert shared_loss == pytest.approx(plain_loss, abs=1e-5)
    assert shared_grads.keys() == plain_grads.keys() and shared_grads
    for name, grad in plain_grads.items():  # ... whose gradients equal the full forward's, LoRA B of every layer
        assert torch.allclose(shared_grads[name], grad, atol=1e-5, rtol=1e-4), name


def test_shared_prefix_is_not_used_where_rows_share_too_little(tiny_model_dir: Path) -> None:
    model = _lora_model(tiny_model_dir)
    share_prompt_prefix(model, min_tokens=16)
    ids, mask, labels = _batch(prefix=8)
    plain = _lora_model(tiny_model_dir)
    with torch.no_grad():
        assert model(input_ids=ids, attention_mask=mask, labels=labels).loss.item() == pytest.approx(
            plain(input_ids=ids, attention_mask=mask, labels=labels).loss.item(), abs=1e-6)
    assert shared_prefix_length(ids[:1], mask[:1]) == 0  # a single row shares nothing with anyone
    padded = mask.clone()
    padded[0, 5] = 0
    assert shared_prefix_length(ids, padded) == 5  # a padded position ends the shared prefix


def test_a_training_batch_that_shares_too_little_is_checkpointed_with_the_plain_gradients(
        tiny_model_dir: Path) -> None:
    """The mixed batches at an epoch's end carry whole prompts: their layers recompute activations in the backward
    pass instead of keeping them, and LoRA dropout draws the same masks, so the gradients are the plain ones."""
    ids, mask, labels = _batch(prefix=4)  # 4 shared tokens: too few to share

    def run(patched: bool) -> tuple[float, dict, int, list]:
        model = _lora_model(tiny_model_dir, dropout=0.3)
        if patched:
            share_prompt_prefix(model)
        layers = model.get_base_model().model.layers
        mlp_calls = []
        for layer in layers:
            layer.mlp.register_forward_pre_hook(lambda *_: mlp_calls.append(1))
        torch.manual_seed(7)
        loss, grads = _loss_and_grads(model, ids, mask, labels)
        return loss, grads, len(mlp_calls), [layer.gradient_checkpointing for layer in layers]

    plain_loss, plain_grads, plain_calls, _ = run(patched=False)
    loss, grads, calls, flags = run(patched=True)
    assert plain_calls > 0 and calls == 2 * plain_calls  # every layer ran again in the backward pass ...
    assert not any(flags)  # ... and runs plainly again afterwards
    assert loss == pytest.approx(plain_loss, abs=1e-6)
    assert grads.keys() == plain_grads.keys() and grads
    for name, grad in plain_grads.items():
        assert torch.allclose(grads[name], grad, atol=1e-6, rtol=1e-5), name

    model = _lora_model(tiny_model_dir)
    share_prompt_prefix(model)
    model.eval()
    layers = model.get_base_model().model.layers
    evaluated: list[int] = []
    for layer in layers:
        layer.mlp.register_forward_pre_hook(lambda *_: evaluated.append(1))
    with torch.no_grad():  # no backward pass to recompute for: evaluation runs plainly
        model(input_ids=ids, attention_mask=mask)
    assert len(evaluated) == len(layers)


def test_labelled_positions_only_scores_fewer_positions_with_the_same_loss(tiny_model_dir: Path,
                                                                           monkeypatch) -> None:
    import trl.trainer.utils as trl_utils
    from trl.trainer.utils import add_fused_lm_head

    ids, mask, labels = _batch()
    seen: list[int] = []
    apply = trl_utils._ChunkedLogProbFunction.apply

    def counting(hidden, *args):
        seen.append(hidden.shape[0])
        return apply(hidden, *args)

    monkeypatch.setattr(trl_utils._ChunkedLogProbFunction, "apply", counting)
    from trl.kernels.chunked_logprob import _use_triton

    monkeypatch.setattr(trl_utils, "_use_triton", _use_triton)  # TRL's own rule, whatever ran before; restored after
    results = []
    for compact in (False, True):
        if compact:
            score_labelled_positions_only()
        model = _lora_model(tiny_model_dir)
        add_fused_lm_head(model.get_base_model())
        out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
        results.append(out.loss.item())
    labelled = int((labels[:, 1:] != -100).sum())
    assert seen == [ids.shape[0] * (ids.shape[1] - 1), labelled]
    assert results[1] == pytest.approx(results[0], abs=1e-5)


def test_grouped_sampler_batches_one_cell_and_covers_every_row_once() -> None:
    groups = ["it/None/0"] * 10 + ["es/None/0"] * 7 + ["it/S/0"] * 5
    sampler = PromptGroupedSampler(groups, batch_size=4, seed=3)
    order = list(sampler)
    assert sorted(order) == list(range(len(groups)))
    batches = sampler.batches()
    whole = [b for b in batches if len({groups[i] for i in b}) == 1 and len(b) == 4]
    assert len(whole) == 10 // 4 + 7 // 4 + 5 // 4  # every full batch a cell could fill is single-cell
    assert Counter(len(b) for b in batches[len(whole):]) == Counter({4: 1, 2: 1})  # 2 + 3 + 1 leftovers pooled
    assert list(PromptGroupedSampler(groups, 4, 3)) == order  # seeded
    sampler.set_epoch(1)
    assert list(sampler) != order  # reshuffled per epoch


def test_sft_records_the_lean_forward_it_used(tiny_model_dir: Path, training_data_dir: Path, tmp_path: Path) -> None:
    from gnt.training.sft import run_sft

    out = tmp_path / "sft"
    run_sft("recipes/tiny.yaml", [("data_dir", str(training_data_dir)), ("output_dir", str(out)),
                                  ("report_to", "none"), ("max_steps", 2), ("share_prompt_prefix", True),
                                  ("model_name_or_path", str(tiny_model_dir))])
    lean = read_json(out / "gnt_run.json")["lean_forward"]
    assert lean["labelled_positions_only"] and lean["shared_prefix"]
    assert lean["rows_in_single_cell_batches"] > 0.9

    from gnt.training.dpo import prepare_dpo

    dpo = prepare_dpo("recipes/tiny-dpo.yaml", [("data_dir", str(training_data_dir)), ("sft_adapter", str(out)),
                                               ("output_dir", str(tmp_path / "dpo")), ("report_to", "none"),
                                               ("share_prompt_prefix", True), ("balance_label_batches", True)])
    lean = dpo.record["lean_forward"]  # preference rows: grouped by cell and balanced by the chosen answer's label
    assert lean["shared_prefix"] and lean["balanced_labels"] and lean["rows_in_balanced_batches"] > 0.5


def test_decision_token_weight_scales_exactly_that_tokens_gradient(tiny_model_dir: Path) -> None:
    """Weighting the decision token by w gives the gradient of a loss whose decision term is w times larger."""
    from transformers import AutoTokenizer
    from trl.trainer.utils import add_fused_lm_head

    from gnt.training.lean_forward import decision_token_ids, weigh_decision_token

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    ids_set = decision_token_ids(tokenizer, ["it", "es"])
    assert len(ids_set) >= 2
    prompt = tokenizer("<en> The citizens are tired.\n", add_special_tokens=False)["input_ids"]
    answer = tokenizer("<it> **NEUTRAL** [La cittadinanza è stanca.]", add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt + answer])
    labels = ids.clone()
    labels[0, : len(prompt)] = -100
    decision = next(i for i in range(len(prompt), ids.shape[1]) if int(ids[0, i]) in ids_set)

    def grads(weight: float | None) -> tuple[float, torch.Tensor]:
        model = _lora_model(tiny_model_dir)
        add_fused_lm_head(model.get_base_model())
        if weight is not None:
            weigh_decision_token(model, ids_set, weight)
        out = model(input_ids=ids, labels=labels, fused_lm_head=True)
        per_token = -out.log_probs[0]
        if weight is None:  # the reference: the weighted loss written out by hand
            loss = (per_token.sum() + 4.0 * per_token[decision - 1]) / out.label_mask.sum()
        else:
            loss = out.loss
        loss.backward()
        return out.loss.item(), torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])

    logged, weighted = grads(5.0)
    plain_loss, by_hand = grads(None)
    assert logged == pytest.approx(plain_loss, abs=1e-6)  # the logged loss is the unweighted one
    assert torch.allclose(weighted, by_hand, atol=1e-6, rtol=1e-4)


def test_balanced_batches_hold_both_labels_equally_within_one_cell() -> None:
    from gnt.training.lean_forward import is_balanced

    groups = ["it/None/0"] * 20 + ["es/None/0"] * 12
    labels = (["GENDERED"] * 8 + ["NEUTRAL"] * 12) + (["GENDERED", "NEUTRAL"] * 6)
    sampler = PromptGroupedSampler(groups, batch_size=4, seed=0, labels=labels)
    batches = sampler.batches()
    assert sorted(i for b in batches for i in b) == list(range(32))
    single_cell_balanced = [b for b in batches if len({groups[i] for i in b}) == 1 and is_balanced(
        [labels[i] for i in b]) and len(b) == 4]
    # it: 8 G + 12 N -> 4 balanced batches and 4 surplus N; es: 6 + 6 -> 3 balanced batches
    assert len(single_cell_balanced) == 7
    assert all(b in single_cell_balanced for b in batches[:7])  # whole balanced batches first, shuffled
    assert [labels[i] for i in batches[-1]] == ["NEUTRAL"] * 4  # the majority's surplus comes last


def test_units_stay_in_one_batch_unless_they_straddle_a_cut() -> None:
    """A judge's references of one source (its minimal pair) are batched together, within one prompt cell."""
    groups = ["judge/it"] * 12 + ["judge/es"] * 9
    units = [f"it{i // 3}" for i in range(12)] + [f"es{i // 2}" for i in range(9)]  # sources of 3 and 2 rows
    sampler = PromptGroupedSampler(groups, batch_size=6, seed=1, units=units)
    batches = sampler.batches()
    assert sorted(i for b in batches for i in b) == list(range(21)), "every row once"
    whole = [b for b in batches if len(b) == 6]
    assert all(len({groups[i] for i in b}) == 1 for b in whole), "one cell per whole batch"
    for b in whole:
        inside = {units[i] for i in b}
        split = [u for u in inside if sum(units[i] == u for i in b) != units.count(u)]
        assert len(split) <= 2, "only the units at a batch's two cuts can be split"
    assert sampler.batches() == batches  # seeded
