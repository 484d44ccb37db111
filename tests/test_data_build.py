"""Building SFT/DPO data from the bundled sample: splits, exclusions, formats, atomicity and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gnt.data.build import BuildConfig, build_dataset
from gnt.data.entry import LANGUAGES, Entry, source_key
from gnt.data.errors import DataErrors
from gnt.data.mgente import load_mgente
from gnt.data.splits import split_entries
from gnt.io import read_jsonl
from gnt.paths import JUDGE_DIR, PROJECT_ROOT, SAMPLE_DIR
from gnt.prompts.grid import PromptGrid


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("build") / "data"
    manifest = build_dataset(BuildConfig(out_dir=str(out), templated_pairs=200, progress=False))
    return out, manifest


def rows(out: Path, name: str) -> list[dict]:
    return read_jsonl(out / name)


def test_layout_and_counts(built: tuple[Path, dict]) -> None:
    out, manifest = built
    for name in ("sft/train.jsonl", "sft/dev.jsonl", "dpo/train.jsonl", "dpo/dev.jsonl", "eval/mgente_test.jsonl",
                 "eval/templated_suite.jsonl", "manifest.json"):
        assert (out / name).is_file(), name
    assert manifest["counts"]["totals"]["sft/train"] == len(rows(out, "sft/train.jsonl"))
    assert set(manifest["ids"]) == {"train", "dev", "test", "align", "excluded"} and not manifest["ids"]["align"]
    assert not (out / "onpolicy").exists() and not (out / "eval" / "mgente_align.jsonl").exists()
    assert all(len(h) == 16 for h in manifest["inputs"].values())
    assert json.loads((out / "manifest.json").read_text())["config"]["seed"] == 0


def test_no_english_source_crosses_splits_in_any_language(built: tuple[Path, dict]) -> None:
    out, manifest = built
    train_keys = {r["source_key"] for r in rows(out, "sft/train.jsonl") + rows(out, "dpo/train.jsonl")}
    dev_keys = {r["source_key"] for r in rows(out, "sft/dev.jsonl")}
    test_entries = [Entry.from_record(r) for r in rows(out, "eval/mgente_test.jsonl")]
    test_keys = {e.source_key for e in test_entries}
    assert test_entries and not (train_keys & test_keys) and not (dev_keys & test_keys) and not (train_keys & dev_keys)
    # a parallel source held out in one language is held out in all four
    all_entries = load_mgente(SAMPLE_DIR)
    for key in test_keys:
        langs_with_key = {e.lang for e in all_entries if e.source_key == key}
        assert langs_with_key == {e.lang for e in test_entries if e.source_key == key}
    assert set(manifest["source_keys"]["test"]) >= test_keys


def test_demonstrations_and_judge_exemplars_are_excluded(built: tuple[Path, dict]) -> None:
    out, _ = built
    demo_keys = PromptGrid(LANGUAGES).demonstration_keys()
    exemplar_keys = {
        source_key(json.loads(line)["source"])
        for path in (JUDGE_DIR / "exemplars").glob("*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    assert len(demo_keys) == 4 and len(exemplar_keys) == 8
    used = {r["source_key"] for name in ("sft/train.jsonl", "sft/dev.jsonl", "dpo/train.jsonl") for r in rows(out, name)}
    used |= {Entry.from_record(r).source_key for r in rows(out, "eval/mgente_test.jsonl")}
    assert not used & (demo_keys | exemplar_keys)


def test_sft_targets_follow_the_set(built: tuple[Path, dict]) -> None:
    out, _ = built
    sft = rows(out, "sft/train.jsonl")
    for row in sft:
        target = row["completion"][0]["content"]
        assert row["completion"][0]["role"] == "assistant"
        label = "GENDERED" if row["set"] == "Set-G" else "NEUTRAL"
        assert target.startswith(f"<{row['lang']}> **{label}** [") and target.endswith("]")
        assert row["prompt"][-1]["role"] == "user" and row["prompt"][-1]["content"].split("\n\n")[-1].startswith("<en> ")
    # every common-set alternative is a target of its own
    assert {r["target"] for r in sft if r["set"] == "Set-N"} >= {"ref_n0", "ref_n1", "ref_n2"}
    # training prompts cover the whole grid
    cells = {r["cell"].split("/", 1)[1] for r in sft}
    assert len(cells) == 12
    assert {r["lang"] for r in sft if r["origin"] == "templated"} == set(LANGUAGES)


def test_dpo_pairs_of_every_kind(built: tuple[Path, dict]) -> None:
    out, _ = built
    dpo = rows(out, "dpo/train.jsonl")
    kinds = {r["kind"] for r in dpo}
    assert kinds == {"setn_neutral_vs_gendered", "label_coherence", "setg_gendered_vs_neutral", "templated_ambiguous",
                     "label_decision"}
    for row in dpo:
        chosen, rejected = row["chosen"][0]["content"], row["rejected"][0]["content"]
        assert chosen != rejected
        if row["kind"] == "label_decision":  # the label is the only difference, and the chosen one is right
            expected = "GENDERED" if row["set"] == "Set-G" else "NEUTRAL"
            assert f"**{expected}**" in chosen and f"**{expected}**" not in rejected
            assert chosen.split("** ", 1)[1] == rejected.split("** ", 1)[1]
        if row["kind"] == "label_coherence":
            assert "**NEUTRAL**" in chosen and "**NEUTRAL**" in rejected
        if row["kind"] == "setg_gendered_vs_neutral":
            assert "**GENDERED**" in chosen and "**NEUTRAL**" in rejected


def test_rows_load_with_datasets(built: tuple[Path, dict]) -> None:
    from datasets import load_dataset

    sft = load_dataset("json", data_files=str(built[0] / "sft/train.jsonl"), split="train")
    dpo = load_dataset("json", data_files=str(built[0] / "dpo/train.jsonl"), split="train")
    assert {"prompt", "completion"} <= set(sft.column_names)
    assert {"prompt", "chosen", "rejected"} <= set(dpo.column_names)


def test_trl_trainers_accept_the_rows(built: tuple[Path, dict], tiny_model_dir: Path, tmp_path: Path) -> None:
    """One optimisation step of TRL's SFT and DPO trainers on the built files (format acceptance, not quality)."""
    from datasets import load_dataset
    from peft import LoraConfig
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer

    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    common = {"max_steps": 1, "per_device_train_batch_size": 2, "report_to": [], "use_cpu": True, "save_strategy": "no"}
    sft = load_dataset("json", data_files=str(built[0] / "sft/train.jsonl"), split="train").select(range(8))
    trainer = SFTTrainer(
        model=str(tiny_model_dir), args=SFTConfig(output_dir=str(tmp_path / "sft"), max_length=512, **common),
        train_dataset=sft, peft_config=lora,
    )
    assert trainer.train().training_loss > 0
    dpo = load_dataset("json", data_files=str(built[0] / "dpo/train.jsonl"), split="train").select(range(8))
    trainer = DPOTrainer(
        model=str(tiny_model_dir), args=DPOConfig(output_dir=str(tmp_path / "dpo"), max_length=512, **common),
        train_dataset=dpo, peft_config=lora,
    )
    assert trainer.train().training_loss > 0


def test_split_is_stable_when_data_grows() -> None:
    entries = load_mgente(SAMPLE_DIR)
    small = split_entries(entries[: len(entries) // 2], seed=3)
    large = split_entries(entries, seed=3)
    side = {e.id + e.lang: name for name in ("train", "dev", "test") for e in large.side(name)}
    for name in ("train", "dev", "test"):
        for entry in small.side(name):
            assert side[entry.id + entry.lang] == name


def test_failed_build_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    lines = (SAMPLE_DIR / "en-it.tsv").read_text(encoding="utf-8").splitlines()
    cells = lines[5].split("\t")
    cells[2] = "Set-Q"
    lines[5] = "\t".join(cells)
    (bad / "en-it.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    existing = tmp_path / "existing"
    build_dataset(BuildConfig(out_dir=str(existing), langs=("es",), templated_pairs=0, progress=False))
    before = sorted(p.name for p in existing.rglob("*"))
    for target in (out, existing):
        with pytest.raises(DataErrors, match=r"en-it.tsv:6:SET: unknown SET value 'Set-Q'"):
            build_dataset(BuildConfig(out_dir=str(target), mgente=str(bad), langs=("it",), progress=False))
    assert not out.exists() and sorted(p.name for p in existing.rglob("*")) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary leftovers


def test_failure_mid_write_leaves_previous_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gnt.data.build as build_module

    out = tmp_path / "out"
    build_dataset(BuildConfig(out_dir=str(out), langs=("de",), templated_pairs=0, progress=False))
    manifest_before = (out / "manifest.json").read_text()

    def explode(*_args, **_kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(build_module, "write_json", explode)
    with pytest.raises(OSError, match="disk full"):
        build_dataset(BuildConfig(out_dir=str(out), langs=("de", "it"), templated_pairs=0, progress=False))
    assert (out / "manifest.json").read_text() == manifest_before


def test_cli_prints_counts_and_exit_code_2_on_bad_input(tmp_path: Path) -> None:
    script = PROJECT_ROOT / "data" / "build.py"
    ok = subprocess.run([sys.executable, str(script), "--out", str(tmp_path / "d"), "--langs", "it",
                         "--templated-pairs", "20", "--no-progress"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "sft/train" in ok.stdout and str(tmp_path / "d") in ok.stdout
    bad = tmp_path / "en-it.tsv"
    bad.write_text("ID,SET,SRC\n1,Set-N,x\n")
    failed = subprocess.run([sys.executable, str(script), "--mgente", str(bad), "--out", str(tmp_path / "e")],
                            capture_output=True, text=True, timeout=120)
    assert failed.returncode == 2 and "wrong delimiter" in failed.stderr and f"{bad}:1" in failed.stderr
    assert not (tmp_path / "e").exists()


def test_training_prompts_can_be_drawn_from_chosen_cells_and_held_out_sides_are_written(tmp_path: Path) -> None:
    from gnt.data.errors import DataError

    out = tmp_path / "data"
    build_dataset(BuildConfig(out_dir=str(out), langs=("it", "es"), train_configs=("None", "S"), train_shots=(0,),
                              templated_pairs=40, progress=False))
    for name in ("sft/train.jsonl", "dpo/train.jsonl", "dpo/dev.jsonl"):
        assert {r["cell"].split("/", 1)[1] for r in rows(out, name)} <= {"None/0", "S/0"}
    test_pairs = rows(out, "dpo/test.jsonl")
    held_out = {json.loads(line)["source_key"] for line in (out / "eval/mgente_test.jsonl").open(encoding="utf-8")}
    assert test_pairs and {r["source_key"] for r in test_pairs if r["origin"] == "mgente"} <= held_out
    for side in ("test", "dev"):
        assert rows(out, f"eval/templated_{side}.jsonl"), side
    train_keys = {r["source_key"] for r in rows(out, "sft/train.jsonl")}
    assert not train_keys & {r["source_key"] for r in test_pairs}
    with pytest.raises(DataError, match="training cells"):
        build_dataset(BuildConfig(out_dir=str(tmp_path / "bad"), train_configs=("G+X",), progress=False))


def test_an_align_side_keeps_sources_out_of_every_training_row_and_moves_no_test_or_dev_source(
        tmp_path: Path, built: tuple[Path, dict]) -> None:
    from gnt.data.errors import DataError

    plain, plain_manifest = built
    out = tmp_path / "data"
    manifest = build_dataset(BuildConfig(out_dir=str(out), templated_pairs=200, align_fraction=0.25, progress=False))
    for side in ("test", "dev"):  # adding an align side takes its sources from train only
        assert manifest["ids"][side] == plain_manifest["ids"][side]
        assert manifest["source_keys"][side] == plain_manifest["source_keys"][side]
    align = {e["source_key"] for e in rows(out, "eval/mgente_align.jsonl") + rows(out, "eval/templated_align.jsonl")}
    assert manifest["ids"]["align"] and align == set(manifest["source_keys"]["align"])
    trained = {r["source_key"] for name in ("sft/train.jsonl", "sft/dev.jsonl", "dpo/train.jsonl", "dpo/dev.jsonl")
               for r in rows(out, name)}
    assert not align & trained
    assert align & {r["source_key"] for r in rows(plain, "sft/train.jsonl")}  # they were training sources before
    prompts = rows(out, "onpolicy/align.jsonl")
    assert {r["source_key"] for r in prompts} == align and all(r["prompt"] for r in prompts)
    assert sum(manifest["counts"]["onpolicy_prompts"]["align"].values()) == len(prompts)
    with pytest.raises(DataError, match="align_fraction must stay below 1"):
        build_dataset(BuildConfig(out_dir=str(tmp_path / "bad"), test_fraction=0.5, align_fraction=0.5, progress=False))


def test_more_templated_dev_pairs_enlarge_dev_alone_with_distinct_sources_of_the_dev_adjectives(
        tmp_path: Path, built: tuple[Path, dict]) -> None:
    from gnt.data.errors import DataError

    plain, plain_manifest = built
    out = tmp_path / "data"
    manifest = build_dataset(BuildConfig(out_dir=str(out), templated_pairs=200, templated_dev_pairs=40,
                                         progress=False))
    assert manifest["counts"]["templated_pairs"]["dev_added"] == 40 and not manifest["notes"]
    for name in ("sft/train.jsonl", "dpo/train.jsonl", "eval/templated_train.jsonl", "eval/templated_test.jsonl",
                 "eval/mgente_dev.jsonl", "eval/templated_suite.jsonl"):
        assert (out / name).read_bytes() == (plain / name).read_bytes(), name
    before, after = rows(plain, "eval/templated_dev.jsonl"), rows(out, "eval/templated_dev.jsonl")
    assert after[:len(before)] == before
    added = after[len(before):]
    assert len(added) == 80 and {r["set"] for r in added} == {"Set-G", "Set-N"}
    # only adjectives that were already on dev: no training or test source can be among them
    assert {r["meta"]["adjective"] for r in added} <= set(plain_manifest["templated_adjectives"]["dev"])
    new_n = [(r["lang"], r["source"]) for r in added if r["set"] == "Set-N"]
    assert len(set(new_n)) == 40 and not set(new_n) & {(r["lang"], r["source"]) for r in before}
    trained = {r["source_key"] for name in ("sft/train.jsonl", "dpo/train.jsonl") for r in rows(out, name)}
    assert not {r["source_key"] for r in added} & (trained | set(manifest["source_keys"]["test"]))
    assert len(rows(out, "sft/dev.jsonl")) > len(rows(plain, "sft/dev.jsonl"))
    every = build_dataset(BuildConfig(out_dir=str(tmp_path / "all"), templated_pairs=200,
                                      templated_dev_pairs=10**6, progress=False))
    assert "asks for more pairs than the dev adjectives give" in every["notes"][0]
    assert every["counts"]["templated_pairs"]["dev_added"] > 40
    with pytest.raises(DataError, match="templated_dev_pairs -1 must be 0"):
        build_dataset(BuildConfig(out_dir=str(tmp_path / "bad"), templated_dev_pairs=-1, progress=False))
    with pytest.raises(DataError, match="needs templated_pairs > 0"):
        build_dataset(BuildConfig(out_dir=str(tmp_path / "bad"), templated_pairs=0, templated_dev_pairs=5,
                                  progress=False))


# ---------------------------------------------------------------------------------------------------------------
# A careless --out, bad flags and missing inputs: a clear error, exit 2, nothing lost
# ---------------------------------------------------------------------------------------------------------------


def _build_cli():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gnt_data_build_cli", PROJECT_ROOT / "data" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _cli_error(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    """Run data/build.py in-process; assert exit 2 and return its last stderr line."""
    cli = _build_cli()
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert "error: " in lines[-1] and "Traceback" not in "\n".join(lines)
    return lines[-1]


def test_out_folder_with_user_files_is_refused_and_kept(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "x"
    (out / "runs").mkdir(parents=True)
    (out / "runs" / "keep").write_text("k\n")
    message = _cli_error(["--out", str(out), "--langs", "it", "--templated-pairs", "0", "--no-progress"], capsys)
    assert "already holds files this project did not write (runs)" in message
    assert (out / "runs" / "keep").read_text() == "k\n" and sorted(p.name for p in out.iterdir()) == ["runs"]


def test_out_equal_to_the_input_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = tmp_path / "mgente"
    data.mkdir()
    for name in ("en-it.tsv", "en-es.tsv"):
        (data / name).write_bytes((SAMPLE_DIR / name).read_bytes())
    message = _cli_error(["--mgente", str(data), "--out", str(data), "--langs", "it,es", "--no-progress"], capsys)
    assert "contains the input mgente=" in message
    assert sorted(p.name for p in data.iterdir()) == ["en-es.tsv", "en-it.tsv"]
    _cli_error(["--mgente", str(data / "en-it.tsv"), "--out", str(tmp_path), "--langs", "it"], capsys)
    assert (data / "en-it.tsv").read_bytes() == (SAMPLE_DIR / "en-it.tsv").read_bytes()


def test_rebuild_replaces_its_own_output_but_not_files_added_to_it(tmp_path: Path) -> None:
    out = tmp_path / "data"
    config = BuildConfig(out_dir=str(out), langs=("it",), templated_pairs=0, progress=False)
    build_dataset(config)
    assert (out / ".gnt-data-build").is_file()
    build_dataset(config)  # our own folder: replaced
    (out / "notes.txt").write_text("mine\n")
    from gnt.data.errors import DataError

    with pytest.raises(DataError, match="holds files the build did not write \\(notes.txt\\)"):
        build_dataset(config)
    assert (out / "notes.txt").read_text() == "mine\n"


@pytest.mark.parametrize(("flags", "expected"), [
    (["--test-fraction", "1.5"], "test_fraction 1.5 must be in [0, 1)"),
    (["--templated-pairs", "-5"], "templated_pairs -5 must be 0"),
    (["dpo_kinds=bogus"], "dpo_kinds: unknown kind(s) ['bogus']"),
    (["--langs", ","], "selects no language"),
    (["test_fraction=0.6", "dev_fraction=0.5"], "test_fraction + dev_fraction + align_fraction must stay below 1"),
    (["train_shots=0,3"], "training cells: unknown or empty '3'"),
])
def test_bad_flags_are_one_error_line(flags: list[str], expected: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture) -> None:
    message = _cli_error(["--out", str(tmp_path / "d"), "--no-progress", *flags], capsys)
    assert expected in message
    assert not (tmp_path / "d").exists()


def test_hub_id_while_offline_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)  # read at import: set it where it lives
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    message = _cli_error(["--mgente", "nobody/no-such-dataset", "--out", str(tmp_path / "d"), "--langs", "it",
                          "--no-progress"], capsys)
    assert "nobody/no-such-dataset: cannot load 'mGeNTE en-it'" in message and "huggingface-cli login" in message
    assert not (tmp_path / "d").exists()
