"""A tiny random XCOMET-architecture checkpoint, built offline, so the real scoring path is testable on CPU.

Why: the real scorer (``Unbabel/XCOMET-XL``, 3.5B parameters, a gated hub download) cannot run in CI, yet the
code that matters — the isolated environment, ``load_from_checkpoint``, ``predict`` with its three input
combinations, the MQM-from-spans term and the error-span decoder — is the same for any encoder size. This module
builds an ``XCOMETMetric`` (comet's own class) over a 2-layer random XLM-RoBERTa-XL encoder with a tokenizer
trained on the spot, and saves it in comet's checkpoint layout (``checkpoints/model.ckpt`` + ``hparams.yaml``), so
``comet.load_from_checkpoint`` loads it exactly as it loads a downloaded model. The regression head ends in a
sigmoid so that segment scores are in [0, 1] like the real model's; the word-level head is random, so some tokens
come out as error spans (the span path is exercised, not just the empty case).

Two halves, for two environments:
- :func:`build_checkpoint` runs INSIDE the comet environment (``python gnt/comet/tiny.py JOB.json``, the job naming OUT_DIR); it imports
  only comet and its dependencies, never gnt (gnt needs transformers 5, comet needs transformers < 5).
- :func:`ensure_tiny_xcomet` runs in the main environment: it keys the cache folder by the builder's hash
  (this file + the comet pins), and runs the builder as a subprocess into ``$GNT_CACHE_DIR/models`` (or
  ``~/.cache/gnt-align/models``), atomically, once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

KIND = "tiny-xcomet"
BUILDER_VERSION = "1"
MARKER = "gnt_model.json"  # same marker as gnt.models.cache: a folder without it is not a finished build
CHECKPOINT = Path("checkpoints") / "model.ckpt"

SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")  # XLM-R's ids 0..3, mask after them
ENCODER_SHAPE = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 514,  # 512 usable positions + XLM-R's padding offset
}

# Sentences the tokenizer is trained on (en + the four target languages). Random weights make the scores
# meaningless; the tokenizer only has to segment every language into known pieces.
_CORPUS = """\
The citizens are tired after the long meeting.
All the teachers agreed to postpone the exam.
The doctor told the patient to rest for a week.
Every student must submit the translation by Friday.
The members of the committee voted against the proposal.
I think I'm tired, she said to her colleagues.
I cittadini sono stanchi dopo la lunga riunione.
La cittadinanza è stanca dopo la lunga riunione.
Tutto il personale docente ha deciso di rinviare l'esame.
Ogni persona iscritta deve consegnare la traduzione entro venerdì.
Il medico ha detto al paziente di riposare per una settimana.
Los ciudadanos están cansados después de la larga reunión.
La ciudadanía está cansada después de la larga reunión.
Todo el profesorado acordó aplazar el examen.
Cada estudiante debe entregar la traducción antes del viernes.
Die Bürgerinnen und Bürger sind nach der langen Sitzung müde.
Die Bevölkerung ist nach der langen Sitzung müde.
Alle Lehrkräfte haben beschlossen, die Prüfung zu verschieben.
Alle Studierenden müssen die Übersetzung bis Freitag abgeben.
Οι πολίτες είναι κουρασμένοι μετά τη μεγάλη συνάντηση.
Ο πληθυσμός είναι κουρασμένος μετά τη μεγάλη συνάντηση.
Όλο το διδακτικό προσωπικό αποφάσισε να αναβάλει την εξέταση.
Κάθε φοιτητής πρέπει να παραδώσει τη μετάφραση μέχρι την Παρασκευή.
0 1 2 3 4 5 6 7 8 9 . , ; : ! ? ' " ( ) [ ] - * @ / & % €
"""


# ----------------------------------------------------------------------------------------------------------------
# Inside the comet environment
# ----------------------------------------------------------------------------------------------------------------


def train_tokenizer(vocab_size: int = 600):
    """A Unigram (SentencePiece-like) tokenizer with XLM-R's special tokens and pair template, as a fast tokenizer.

    comet needs a *fast* XLM-R tokenizer (it reads subword offsets to place error spans in the MT text).
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import XLMRobertaTokenizerFast

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), unk_token="<unk>", show_progress=False
    )
    tok.train_from_iterator([s for s in _CORPUS.splitlines() if s.strip()], trainer=trainer)
    ids = {t: tok.token_to_id(t) for t in SPECIAL_TOKENS}
    if [ids[t] for t in SPECIAL_TOKENS] != list(range(len(SPECIAL_TOKENS))):
        raise RuntimeError(f"special token ids are not 0..4: {ids}")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", ids["<s>"]), ("</s>", ids["</s>"])],
    )
    return XLMRobertaTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        model_max_length=ENCODER_SHAPE["max_position_embeddings"] - 2,
    )


def build_checkpoint(out_dir: Path, final_dir: Path | None = None, seed: int = 0) -> Path:
    """Build the tiny XCOMET into ``out_dir``; return the checkpoint path.

    ``final_dir`` is where the folder will live once renamed into the cache: the checkpoint records the encoder
    folder (tokenizer + config) by absolute path, as comet does for a hub id, so it must name the final place.
    """
    import pytorch_lightning
    import torch
    import yaml
    from comet.models import XCOMETMetric
    from transformers import XLMRobertaXLConfig

    out_dir = Path(out_dir).resolve()
    final_dir = Path(final_dir).resolve() if final_dir is not None else out_dir
    encoder_dir = out_dir / "encoder"
    tokenizer = train_tokenizer()
    tokenizer.save_pretrained(encoder_dir)
    XLMRobertaXLConfig(
        vocab_size=len(tokenizer),
        **ENCODER_SHAPE,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    ).save_pretrained(encoder_dir)

    torch.manual_seed(seed)
    model = XCOMETMetric(
        encoder_model="XLM-RoBERTa-XL",  # the real XCOMET-XL/XXL encoder family, at toy size
        pretrained_model=str(encoder_dir),
        load_pretrained_weights=False,  # random encoder weights from the config; they are saved in the ckpt
        local_files_only=True,
        word_layer=ENCODER_SHAPE["num_hidden_layers"],
        hidden_sizes=[32, 16],
        final_activation="Sigmoid",
        sent_layer="mix",
        layer_transformation="sparsemax",
    )
    hparams = dict(model.hparams)
    hparams["pretrained_model"] = str(final_dir / "encoder")
    checkpoint = {
        "state_dict": model.state_dict(),
        "hyper_parameters": hparams,
        "pytorch-lightning_version": pytorch_lightning.__version__,
        "epoch": 0,
        "global_step": 0,
    }
    ckpt = out_dir / CHECKPOINT
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    torch.save(checkpoint, ckpt)
    (out_dir / "hparams.yaml").write_text(yaml.safe_dump(hparams, sort_keys=True), encoding="utf-8")
    info = {
        "kind": KIND,
        "builder_version": BUILDER_VERSION,
        "seed": seed,
        "checkpoint": str(CHECKPOINT),
        "parameters": sum(p.numel() for p in model.parameters()),
        "encoder": {"vocab_size": len(tokenizer), **ENCODER_SHAPE},
    }
    (out_dir / MARKER).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return out_dir / CHECKPOINT


# ----------------------------------------------------------------------------------------------------------------
# In the main environment
# ----------------------------------------------------------------------------------------------------------------


def builder_hash() -> str:
    """Cache key: this file and the comet environment's pins (they decide the saved files)."""
    from gnt.comet.env import REQUIREMENTS
    from gnt.models.cache import fingerprint

    return fingerprint(KIND, BUILDER_VERSION, files=[Path(__file__), REQUIREMENTS])


def ensure_tiny_xcomet(cache_dir: Path | None = None, python: str | Path | None = None) -> Path:
    """Checkpoint path of the cached tiny XCOMET (``<cache_dir>/tiny-xcomet-<hash>``), building it once if needed.

    ``cache_dir`` defaults to ``$GNT_CACHE_DIR/models`` or ``~/.cache/gnt-align/models``; ``python`` to the comet
    environment's interpreter (which must be built: :func:`gnt.comet.env.ensure_comet_env`). The build (~10 s) runs as a subprocess of
    the comet environment, into a temporary folder renamed into place when complete.
    """
    from gnt.comet.env import ensure_comet_env, subprocess_env
    from gnt.models.cache import build_cached, default_cache_dir

    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    final = root / f"{KIND}-{builder_hash()}"
    interpreter = str(python) if python is not None else str(ensure_comet_env(auto_install=False))

    def build(tmp: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="gnt-tiny-xcomet-") as scratch:
            job = Path(scratch) / "job.json"
            job.write_text(json.dumps({"out_dir": str(tmp), "final": str(final), "seed": 0}), encoding="utf-8")
            cmd = [interpreter, str(Path(__file__).resolve()), str(job)]
            done = subprocess.run(cmd, capture_output=True, text=True, env=subprocess_env(), timeout=900)
        if done.returncode != 0:
            raise RuntimeError(
                f"building the tiny XCOMET failed (exit {done.returncode}):\n{done.stderr[-4000:]}"
            )

    return build_cached(final, build) / CHECKPOINT


def main(argv: list[str] | None = None) -> int:
    """``python tiny.py JOB.json`` in the comet environment: the job file holds ``out_dir`` and optionally ``final``
    (the folder the build will be renamed to) and ``seed``; :func:`ensure_tiny_xcomet` writes it."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        raise SystemExit("usage: tiny.py JOB.json  (keys: out_dir, final, seed)")
    job = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    final = Path(job["final"]) if job.get("final") else None
    print(build_checkpoint(Path(job["out_dir"]), final, int(job.get("seed", 0))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
