"""A tiny random Qwen2 causal LM with a byte-level BPE tokenizer, built offline in a few seconds.

The model has random weights: it exercises every code path (chat template, generation, LoRA training,
attribution) without a model hub. Its tokenizer is trained on the spot on the multilingual sentences embedded
below, with the ChatML special tokens in the vocabulary from training (nothing is added afterwards and the
embeddings are never resized).

    gnt model OUT_DIR model=tiny   # (python -m gnt.models.tiny OUT_DIR: the old spelling)
"""

from __future__ import annotations

import json
from pathlib import Path

from gnt.models.cache import MARKER, build_cached, default_cache_dir, fingerprint

BUILDER_VERSION = "1"
KIND = "tiny-qwen2"

ENDOFTEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = (ENDOFTEXT, IM_START, IM_END)  # ids 0, 1, 2

# Qwen2.5-style ChatML, without Qwen's default system message: a system turn is rendered only when given.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)

QWEN2_SPLIT_PATTERN = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"

MODEL_SHAPE = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 4096,
}

_EN = """\
The citizens are tired after the long meeting.
All the teachers agreed to postpone the exam.
The doctor told the patient to rest for a week.
Every student must submit the translation by Friday.
The lawyers asked the judge for more time.
Our colleagues from the office will join us tonight.
The director thanked the employees for their work.
The researchers published a new study on language.
Each participant received a certificate.
The nurses worked through the night.
The authors of the report are experts in translation.
The children played in the garden all afternoon.
The voters expressed their opinion clearly.
The workers are on strike until Monday.
The candidates must present a valid document.
Translate the following sentence into Italian.
Translate the following sentence into Spanish.
Translate the following sentence into German.
Translate the following sentence into Greek.
Use gender-neutral language whenever the gender of the referent is unknown.
Is the gender of the person mentioned in the sentence known?
Answer with one label: GENDERED or NEUTRAL.
Label: GENDERED
Label: NEUTRAL
The translation is neutral.
The translation is gendered.
A neutral translation avoids masculine and feminine forms.
She is a famous engineer and he is a well-known architect.
The president of the association spoke first.
The users of the platform can change their settings.
The visitors are welcome in the museum.
The professors and the students met in the hall.
The readers of this newspaper are very loyal.
Everyone who works here knows the rules.
The customer asked for a refund.
The members of the committee voted against the proposal.
The scientists are worried about the climate.
The citizens of Europe have the right to vote.
The owner of the house is abroad.
The experts recommend a gender-neutral reformulation.
Source: The citizens are tired.
Reference: I cittadini sono stanchi.
Return a JSON object with the fields label and translation.
{"label": "NEUTRAL", "translation": "La cittadinanza è stanca."}
{"label": "GENDERED", "translation": "Los ciudadanos están cansados."}
You are a professional translator.
You are a helpful assistant that translates from English.
Think step by step, then give the final translation.
"""

_IT = """\
I cittadini sono stanchi dopo la lunga riunione.
La cittadinanza è stanca dopo la lunga riunione.
Tutto il personale docente ha deciso di rinviare l'esame.
Il medico ha detto al paziente di riposare per una settimana.
Ogni persona iscritta deve consegnare la traduzione entro venerdì.
Gli avvocati hanno chiesto più tempo al giudice.
Le persone che lavorano in ufficio verranno stasera.
La direzione ha ringraziato il personale per il lavoro svolto.
Il gruppo di ricerca ha pubblicato un nuovo studio sulla lingua.
Ogni partecipante ha ricevuto un attestato.
Il personale infermieristico ha lavorato tutta la notte.
Le autrici e gli autori del rapporto sono esperti di traduzione.
I bambini hanno giocato in giardino tutto il pomeriggio.
L'elettorato ha espresso chiaramente la propria opinione.
Chi lavora qui conosce le regole.
Traduci la seguente frase in italiano.
Usa un linguaggio neutro rispetto al genere.
La traduzione è neutra.
La traduzione è marcata per genere.
Il presidente dell'associazione ha parlato per primo.
La presidenza dell'associazione ha preso la parola per prima.
Le persone che utilizzano la piattaforma possono cambiare le impostazioni.
I visitatori sono i benvenuti nel museo.
Chi visita il museo è il benvenuto.
I professori e gli studenti si sono incontrati nell'aula.
Il corpo docente e la comunità studentesca si sono incontrati.
Il cliente ha chiesto un rimborso.
I membri del comitato hanno votato contro la proposta.
Gli scienziati sono preoccupati per il clima.
La comunità scientifica è preoccupata per il clima.
Il proprietario della casa è all'estero.
Genere, neutro, maschile, femminile, traduzione, riferimento.
"""

_ES = """\
Los ciudadanos están cansados después de la larga reunión.
La ciudadanía está cansada después de la larga reunión.
Todo el profesorado acordó aplazar el examen.
El médico le dijo al paciente que descansara una semana.
Cada estudiante debe entregar la traducción antes del viernes.
Los abogados pidieron más tiempo al juez.
Las personas de la oficina vendrán esta noche.
La dirección agradeció al personal su trabajo.
El equipo de investigación publicó un nuevo estudio sobre la lengua.
Cada participante recibió un certificado.
El personal de enfermería trabajó toda la noche.
Los niños jugaron en el jardín toda la tarde.
El electorado expresó claramente su opinión.
Quien trabaja aquí conoce las normas.
Traduce la siguiente oración al español.
Utiliza un lenguaje neutro en cuanto al género.
La traducción es neutra.
La traducción tiene marca de género.
El presidente de la asociación habló primero.
La presidencia de la asociación tomó la palabra.
Las personas usuarias de la plataforma pueden cambiar la configuración.
Los visitantes son bienvenidos en el museo.
Los profesores y los estudiantes se reunieron en la sala.
El cliente pidió un reembolso.
Los miembros del comité votaron en contra de la propuesta.
La comunidad científica está preocupada por el clima.
Género, neutro, masculino, femenino, traducción, referencia.
"""

_DE = """\
Die Bürgerinnen und Bürger sind nach der langen Sitzung müde.
Die Bevölkerung ist nach der langen Sitzung müde.
Alle Lehrkräfte haben beschlossen, die Prüfung zu verschieben.
Der Arzt sagte dem Patienten, er solle sich eine Woche ausruhen.
Alle Studierenden müssen die Übersetzung bis Freitag abgeben.
Die Anwälte baten den Richter um mehr Zeit.
Die Kollegen aus dem Büro kommen heute Abend.
Die Geschäftsleitung dankte den Beschäftigten für ihre Arbeit.
Das Forschungsteam hat eine neue Studie über Sprache veröffentlicht.
Alle Teilnehmenden erhielten eine Urkunde.
Das Pflegepersonal arbeitete die ganze Nacht.
Die Kinder spielten den ganzen Nachmittag im Garten.
Wer hier arbeitet, kennt die Regeln.
Übersetze den folgenden Satz ins Deutsche.
Verwende eine geschlechtergerechte, neutrale Sprache.
Die Übersetzung ist neutral.
Die Übersetzung ist geschlechtsspezifisch.
Der Präsident des Vereins sprach zuerst.
Die Nutzenden der Plattform können die Einstellungen ändern.
Die Besucher sind im Museum willkommen.
Die Professoren und die Studenten trafen sich im Saal.
Der Kunde bat um eine Rückerstattung.
Die Mitglieder des Ausschusses stimmten gegen den Vorschlag.
Die Wissenschaftler sind besorgt über das Klima.
Geschlecht, neutral, männlich, weiblich, Übersetzung, Referenz.
"""

_EL = """\
Οι πολίτες είναι κουρασμένοι μετά τη μεγάλη συνάντηση.
Ο πληθυσμός είναι κουρασμένος μετά τη μεγάλη συνάντηση.
Όλο το διδακτικό προσωπικό αποφάσισε να αναβάλει την εξέταση.
Ο γιατρός είπε στον ασθενή να ξεκουραστεί για μία εβδομάδα.
Κάθε φοιτητής πρέπει να παραδώσει τη μετάφραση μέχρι την Παρασκευή.
Οι δικηγόροι ζήτησαν περισσότερο χρόνο από τον δικαστή.
Οι συνάδελφοι από το γραφείο θα έρθουν απόψε.
Η διεύθυνση ευχαρίστησε το προσωπικό για τη δουλειά του.
Η ερευνητική ομάδα δημοσίευσε μια νέα μελέτη για τη γλώσσα.
Κάθε συμμετέχων έλαβε ένα πιστοποιητικό.
Το νοσηλευτικό προσωπικό εργάστηκε όλη τη νύχτα.
Τα παιδιά έπαιζαν στον κήπο όλο το απόγευμα.
Όποιος εργάζεται εδώ γνωρίζει τους κανόνες.
Μετάφρασε την παρακάτω πρόταση στα ελληνικά.
Χρησιμοποίησε ουδέτερη γλώσσα ως προς το φύλο.
Η μετάφραση είναι ουδέτερη.
Η μετάφραση έχει γραμματικό γένος.
Ο πρόεδρος του συλλόγου μίλησε πρώτος.
Οι χρήστες της πλατφόρμας μπορούν να αλλάξουν τις ρυθμίσεις.
Οι επισκέπτες είναι ευπρόσδεκτοι στο μουσείο.
Οι καθηγητές και οι φοιτητές συναντήθηκαν στην αίθουσα.
Ο πελάτης ζήτησε επιστροφή χρημάτων.
Τα μέλη της επιτροπής ψήφισαν κατά της πρότασης.
Οι επιστήμονες ανησυχούν για το κλίμα.
Φύλο, ουδέτερο, αρσενικό, θηλυκό, μετάφραση, αναφορά.
"""

_LANGS = {"it": "Italian", "es": "Spanish", "de": "German", "el": "Greek"}


def training_corpus() -> list[str]:
    """The sentences the tokenizer is trained on: plain text in five languages plus task markup lines."""
    blocks = {"en": _EN, "it": _IT, "es": _ES, "de": _DE, "el": _EL}
    lines = {code: [s for s in block.splitlines() if s.strip()] for code, block in blocks.items()}
    corpus = [s for block in lines.values() for s in block]
    # Task markup: `<it> **NEUTRAL** [ ... ]`, labelled pairs and prompt fragments, in every language.
    for code, name in _LANGS.items():
        for i, target in enumerate(lines[code]):
            label = "NEUTRAL" if i % 2 else "GENDERED"
            source = lines["en"][i % len(lines["en"])]
            corpus.append(f"<{code}> **{label}** [{target}]")
            corpus.append(f"English: {source}\n{name}: {target}")
            corpus.append(f"<en> {source} <{code}> **{label}** [{target}]")
        corpus.append(f"Translate the following English sentence into {name} using gender-neutral language.")
        corpus.append(f"Label (GENDERED/NEUTRAL) and {name} translation:")
    corpus.extend(f"{s} {ENDOFTEXT}" for s in lines["en"][:5])
    return corpus


def train_tokenizer(vocab_size: int = 2048):
    """Byte-level BPE (Qwen-like) trained on :func:`training_corpus`, wrapped as a transformers fast tokenizer."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    # Qwen2's own pre-tokenizer: AutoTokenizer loads this folder as Qwen2Tokenizer (from config.model_type),
    # which installs exactly this pipeline, so training with it keeps both load paths identical.
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(training_corpus(), trainer=trainer)
    for i, special in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(special) == i, (special, tok.token_to_id(special))

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        bos_token=None,
        unk_token=None,
        clean_up_tokenization_spaces=False,
        model_max_length=MODEL_SHAPE["max_position_embeddings"],
    )
    fast.chat_template = CHAT_TEMPLATE
    if len(fast) > vocab_size:  # the special tokens are part of the trained vocabulary, never added
        raise RuntimeError(f"tokenizer has {len(fast)} tokens > vocab_size {vocab_size}")
    return fast


def build_tiny_model(out_dir: Path, *, seed: int = 0, vocab_size: int = 2048) -> Path:
    """Build the tiny random Qwen2 model and its tokenizer into ``out_dir`` and return ``out_dir``."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(vocab_size)
    eos_id = tokenizer.convert_tokens_to_ids(IM_END)
    pad_id = tokenizer.convert_tokens_to_ids(ENDOFTEXT)

    config = Qwen2Config(
        vocab_size=vocab_size,
        **MODEL_SHAPE,
        tie_word_embeddings=True,
        bos_token_id=pad_id,  # as in Qwen2: <|endoftext|>; inseq needs a bos id
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        dtype="float32",
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(bos_token_id=pad_id, eos_token_id=eos_id, pad_token_id=pad_id)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    info = {
        "kind": KIND,
        "builder_version": BUILDER_VERSION,
        "seed": seed,
        "vocab_size": vocab_size,
        "tokenizer_size": len(tokenizer),
        "eos_token_id": eos_id,
        "pad_token_id": pad_id,
    }
    (out_dir / MARKER).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return out_dir


def builder_hash() -> str:
    """Cache key: this module's source, the builder version and the libraries that shape the saved files."""
    import tokenizers
    import transformers

    return fingerprint(
        KIND, BUILDER_VERSION, transformers.__version__, tokenizers.__version__, files=[Path(__file__)]
    )


def ensure_tiny_model(cache_dir: Path | None = None) -> Path:
    """Path of the cached tiny model (``<cache_dir>/tiny-<hash>``), building it once, atomically, if needed.

    ``cache_dir`` defaults to ``$GNT_CACHE_DIR/models`` or ``~/.cache/gnt-align/models``.
    """
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return build_cached(root / f"tiny-{builder_hash()}", build_tiny_model)


def build_into(out: Path, options: object) -> Path:
    """Build into ``out`` with the command's ``seed`` and ``vocab_size`` (``gnt model OUT model=tiny``)."""
    return build_tiny_model(out, seed=options.seed, vocab_size=options.vocab_size)  # type: ignore[attr-defined]


if __name__ == "__main__":
    from gnt.models.old_spelling import run_as_gnt_model

    run_as_gnt_model("tiny")
