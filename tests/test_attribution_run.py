"""Attribution end to end on the tiny model: an evaluation result in, tidy data + PNGs + record out; contrastive mode
on the sample's common-set rows; the CLI's clear failures."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from test_attribution import write_short_prompts  # pytest puts tests/ on sys.path (prepend import mode)

from gnt.data.mgente import load_mgente
from gnt.output_format import format_output
from gnt.paths import SAMPLE_DIR

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    import matplotlib.image

    assert path.read_bytes()[:8] == PNG_SIGNATURE, path
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 300, (path, image.shape)
    assert float(np.asarray(image).std()) > 0.01  # not a blank canvas


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def prompts_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_short_prompts(tmp_path_factory.mktemp("short-prompts"))


@pytest.fixture(scope="module")
def result_dir(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path, prompts_dir: Path) -> Path:
    """A fixture evaluation result in the evaluator's layout (generations without sources: they come from --data)."""
    out = tmp_path_factory.mktemp("eval") / "tiny"
    out.mkdir()
    entries = [e for e in load_mgente(SAMPLE_DIR, ["it"])][10:22]
    generations, judgments = [], []
    for index, entry in enumerate(entries):
        label = ("NEUTRAL", "GENDERED", "NEUTRAL")[index % 3]
        translation = entry.ref_n[0] if label == "NEUTRAL" else entry.ref_g
        raw = format_output("it", label, translation) if index != 5 else "Sorry, I cannot translate this."
        key = f"gen-{index}"
        generations.append({
            "id": entry.id, "lang": "it", "set": entry.set, "gender": entry.gender, "source_key": entry.source_key,
            "cell": "it/G+S/4", "raw": raw, "label": label if index != 5 else None, "translation": translation,
            "error": None if index != 5 else "no_label", "ref_g": entry.ref_g, "ref_n": list(entry.ref_n), "key": key,
        })
        judgments.append({"key": key, "neutral": label == "NEUTRAL", "label": label})
    extra = dict(generations[0], cell="it/None/0", key="gen-other")
    (out / "generations.jsonl").write_text("".join(json.dumps(g, ensure_ascii=False) + "\n" for g in [*generations, extra]))
    (out / "judgments.jsonl").write_text("".join(json.dumps(j) + "\n" for j in judgments))
    (out / "record.json").write_text(json.dumps({  # the fields of the evaluator's record.json that attribution reads
        "format": "gnt-align/eval-record/1",
        "model": {"name": "tiny", "kind": "base", "base_model": str(tiny_model_dir), "adapter": None, "run_dir": None,
                  "global_step": None},
        "rows": {"source": str(SAMPLE_DIR)}, "grid": {"seed": 0, "prompts_dir": str(prompts_dir)},
    }))
    return out


def test_cli_writes_scores_aggregates_figures_and_record(result_dir: Path) -> None:
    from gnt.cli.attribute import main

    assert main([str(result_dir), "--batch-size", "4", "--all-rows"]) == 0
    out = result_dir / "attribution" / "it_G+S_4" / "gradxinput"
    records = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert {r["target"] for r in records} == {"S_L", "S_T"}
    assert len(records) == 2 * 11  # 12 rows of the cell, one without a label skipped
    record = json.loads((out / "record.json").read_text())
    assert record["method"] == "gradxinput" and record["model"].endswith(Path(record["model"]).name)
    assert record["n_rows"] == 11  # 11 rows in batches of 4: one forward and one backward per span per batch
    assert record["passes"]["forwards"] == 3 and record["passes"]["backwards"] == 6
    assert record["passes"]["row_targets"] == 22
    assert [s["reason"] for s in record["skipped"]] == ["no label in the output (no_label)"]
    assert record["dtype"] == "float32" and record["device"] == "cpu" and record["rows_per_second"] > 0
    for r in records:
        assert r["outcomes"]["label"] in ("correct_label", "wrong_label") and r["outcomes"]["judged"] in ("neutral", "gendered")
        assert r["top_tokens"][0]["score"] == 1.0 and r["straddles"] == 0
        assert "source" not in r["groups"] if r["target"] == "S_T" else "label" not in r["groups"]
        assert sum(s["top10_count"] for s in r["parts"].values()) == 10
    with open(out / "aggregate.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert set(table[0]) == {"level", "part", "target", "lang", "set", "outcome_by", "outcome", "top10_rate",
                             "top10_share", "mean_score", "relevance_share", "n"}
    assert {r["outcome_by"] for r in table} == {"all", "label", "judged", "gnt"}
    everything = [r for r in table if r["level"] == "group" and r["set"] == "all" and r["outcome_by"] == "all" and r["target"] == "S_L"]
    assert {r["part"] for r in everything} >= {"system", "preamble", "guidelines", "shot_gendered_user", "shot_neutral_assistant", "source"}
    assert all(int(r["n"]) == 11 for r in everything)
    for name in record["figures"]:
        assert_png(out / name)
    assert {"fig_top10.png", "fig_mean.png", "fig_shots.png", "fig_top10_judged.png"} <= set(record["figures"])


def test_attnlrp_method_end_to_end_records_conservation(result_dir: Path, tmp_path: Path) -> None:
    from gnt.attribution.attnlrp import AttnLRPUnavailable, load_lxt_patches
    from gnt.cli.attribute import main

    try:
        load_lxt_patches()
    except AttnLRPUnavailable as exc:  # scripts/install.sh installs lxt 2.1: its absence is a broken install
        pytest.fail(f"AttnLRP unavailable although the project installs lxt: {exc}")
    assert main([str(result_dir), "--method", "attnlrp", "--max-rows", "1", "--sets", "Set-N", "--out", str(tmp_path), "--no-plots"]) == 0
    out = tmp_path / "it_G+S_4" / "attnlrp"
    record = json.loads((out / "record.json").read_text())
    assert record["method"] == "attnlrp" and record["lxt_supported"] == ["2.1"]
    scores = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert scores and all(isinstance(s["conservation"], float) for s in scores)


def test_cli_explains_unavailable_attnlrp(result_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from gnt.attribution import attnlrp
    from gnt.cli.attribute import main

    monkeypatch.setattr(attnlrp, "lxt_version", lambda: None)
    monkeypatch.delitem(sys.modules, "lxt.efficient.patches", raising=False)
    assert main([str(result_dir), "--method", "attnlrp", "--out", str(tmp_path)]) == 2
    message = capsys.readouterr().err
    assert "AttnLRP unavailable" in message and "lxt==2.1" in message and "gradxinput" in message


def test_cli_names_missing_cells_and_sources(result_dir: Path, tmp_path: Path, capsys) -> None:
    from gnt.cli.attribute import main

    assert main([str(result_dir), "--cell", "es/G+S/4", "--out", str(tmp_path)]) == 2
    assert "it/G+S/4" in capsys.readouterr().err  # the available cells are listed
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "generations.jsonl").write_text((result_dir / "generations.jsonl").read_text())
    assert main([str(bare), "--out", str(tmp_path)]) == 2
    assert "--data" in capsys.readouterr().err


def test_contrastive_on_common_rows(tiny_model_dir: Path, prompts_dir: Path, tmp_path: Path) -> None:
    from gnt.cli.attribute import main

    args = ["--contrastive", "--data", str(SAMPLE_DIR), "--model", str(tiny_model_dir), "--langs", "it",
            "--prompts", str(prompts_dir), "--min-refs", "3", "--max-rows", "2", "--out", str(tmp_path)]
    assert main(args) == 0
    out = tmp_path / "it_G+S_4" / "contrastive"
    records = [json.loads(line) for line in (out / "contrastive.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for record in records:
        assert len(record["pairs"]) == 3  # the common set's three neutral references
        assert "**GENDERED**" in record["gendered_answer"]
        for pair in record["pairs"]:
            assert "**NEUTRAL**" in pair["neutral_answer"]
            assert pair["d"] == pytest.approx(pair["logp_neutral"] - record["logp_gendered"], abs=1e-4)
            assert sum(b["delta"] for b in pair["aligned_blocks"]) == pytest.approx(pair["d"], abs=1e-4)
            assert sum(pair["segment_deltas"].values()) == pytest.approx(pair["d"], abs=1e-4)
            assert pair["divergent_delta"] + pair["shared_delta"] == pytest.approx(pair["d"], abs=1e-5)
            assert {"system", "preamble", "guidelines", "source"} <= set(pair["groups"])
            assert any(b["op"] != "equal" for b in pair["aligned_blocks"])
            assert all(t["logprob"] <= 0 for t in pair["neutral_tokens"])
    inputs = list(csv.DictReader((out / "contrastive_inputs.csv").read_text().splitlines()))
    targets = list(csv.DictReader((out / "contrastive_targets.csv").read_text().splitlines()))
    assert {r["part"] for r in inputs if r["level"] == "group"} >= {"system", "source", "shot_neutral_assistant"}
    assert {r["component"] for r in targets} == {"d", "label", "translation", "output_format", "divergent", "shared"}
    assert_png(out / "fig_contrastive.png")
    record = json.loads((out / "record.json").read_text())
    assert record["labels"] == "matching" and record["passes"] == {"forwards": 2, "backwards": 2}


def test_contrastive_relevance_equals_unbatched_autograd(tiny_model_dir: Path, prompts_dir: Path) -> None:
    """The batched pairs with one prompt leaf each give the same input attribution as one pair at a time."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gnt.attribution.contrastive import contrast_row, tokenise_answer
    from gnt.attribution.spans import build_input
    from gnt.prompts.grid import Cell, PromptGrid

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float64).eval()
    grid = PromptGrid(("it",), prompts_dir)
    prompt = grid.render("The citizens are tired.", Cell("it", "G+S", 2))
    refs_n = ["La cittadinanza è stanca.", "Le persone sono stanche."]
    result = contrast_row(model, tokenizer, prompt, "it", "I cittadini sono stanchi.", refs_n, labels="NEUTRAL")
    base = build_input(tokenizer, prompt, None)
    ids = torch.tensor(base.input_ids)
    embed = model.get_input_embeddings()
    gendered = tokenise_answer(tokenizer, "it", "NEUTRAL", "I cittadini sono stanchi.")
    for k, ref in enumerate(refs_n):
        neutral = tokenise_answer(tokenizer, "it", "NEUTRAL", ref)
        leaf = embed(ids[None])[0].detach().requires_grad_(True)
        logps = []
        for answer in (neutral, gendered):
            seq = torch.cat([leaf, embed(torch.tensor(answer.ids)[None])[0].detach()])
            logits = model(inputs_embeds=seq[None], use_cache=False).logits[0].log_softmax(-1)
            n = len(base.input_ids)
            logps.append(sum(logits[n - 1 + t, answer.ids[t]] for t in range(len(answer.ids))))
        d = logps[0] - logps[1]
        (grad,) = torch.autograd.grad(d, leaf)
        relevance = (leaf * grad).sum(-1).detach().numpy()
        pair = result["pairs"][k]
        assert pair["d"] == pytest.approx(float(d.detach()), abs=1e-6)
        assert pair["segment_deltas"]["label"] == pytest.approx(0.0, abs=1e-9)  # same label on both sides
        for part, value in pair["signed_parts"].items():
            expected = sum(relevance[i] for i in base.ranked("S_L") if base.token_parts[i] == part)
            assert value == pytest.approx(expected, abs=1e-6), part


# ------------------------------------------------------------------------------------------------------------------
# On a result written by the real evaluator (gnt.evaluation.sweep), with a LoRA adapter
# ------------------------------------------------------------------------------------------------------------------


class _FormatBackend:
    """A generation backend that answers every grid request in the output format (the model's own output is then
    whatever this returns: attribution forces it either way). No system role, like Gemma's template."""

    model_id = "scripted-format"

    def __init__(self) -> None:
        self.calls = 0

    def supports_system_role(self) -> bool:
        return False

    def generate(self, requests):
        from gnt.generation.base import Generation

        out = []
        for _ in requests:
            self.calls += 1
            label = "NEUTRAL" if self.calls % 2 else "GENDERED"
            out.append(Generation(format_output("it", label, "La cittadinanza ha espresso la propria opinione.")))
        return out

    def describe(self) -> dict:
        return {"backend": "scripted-format", "model_id": self.model_id}

    def close(self) -> None:
        pass


def test_attribution_reads_the_evaluators_result_and_merges_an_adapter(tiny_model_dir: Path, prompts_dir: Path, tmp_path: Path) -> None:
    from _eval_helpers import make_checkpoint

    from gnt.cli.attribute import main
    from gnt.cli.evaluate import load_eval_config
    from gnt.evaluation.sweep import run_sweep

    config = load_eval_config(
        None, [("langs", "it"), ("configs", "G+S"), ("shots", "4"), ("rows_per_lang", "4"), ("progress", "false"),
               ("bootstrap_samples", "10")],
        model=str(tiny_model_dir), mgente=str(SAMPLE_DIR), out_dir=str(tmp_path / "eval"), prompts_dir=str(prompts_dir),
    )
    out = run_sweep(config, backend_factory=lambda c, b, a: _FormatBackend())
    result = out / "base"
    generations = [json.loads(line) for line in (result / "generations.jsonl").read_text().splitlines()]
    (result / "judgments.jsonl").write_text("".join(
        json.dumps({"key": g["key"], "neutral": "NEUTRAL" in g["raw"], "label": "NEUTRAL" if "NEUTRAL" in g["raw"] else "GENDERED"}) + "\n"
        for g in generations
    ))
    assert main([str(result), "--balance-by", "judged", "--no-plots"]) == 0
    base_dir = result / "attribution" / "it_G+S_4" / "gradxinput"
    record = json.loads((base_dir / "record.json").read_text())
    assert record["model"] == str(tiny_model_dir) and record["adapter"] is None
    assert record["n_rows"] == len(generations) and not record["skipped"]  # every prompt hash matched (no system role)
    scores = [json.loads(line) for line in (base_dir / "scores.jsonl").read_text().splitlines()]
    assert {s["outcomes"]["judged"] for s in scores} == {"neutral", "gendered"}
    assert all("system" in s["parts"] for s in scores if s["target"] == "S_L")  # folded into the first user turn

    adapter = make_checkpoint(tiny_model_dir, tmp_path / "adapter", seed=0)  # random B weights: merging changes the model
    assert main([str(result), "--adapter", str(adapter), "--out", str(tmp_path / "with-adapter"), "--no-plots"]) == 0
    merged = [json.loads(line) for line in (tmp_path / "with-adapter" / "it_G+S_4" / "gradxinput" / "scores.jsonl").read_text().splitlines()]
    assert json.loads((tmp_path / "with-adapter" / "it_G+S_4" / "gradxinput" / "record.json").read_text())["adapter"] == str(adapter)
    assert [s["id"] for s in merged] == [s["id"] for s in scores]
    assert any(abs(a["target_logit"] - b["target_logit"]) > 1e-4 for a, b in zip(merged, scores, strict=True))
