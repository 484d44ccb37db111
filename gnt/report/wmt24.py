"""The report's WMT24 gender-resolution block: the paper's four tables, our checkpoints placed among the systems.

Read from ``<results>/wmt24/summary.json`` (written by ``python eval/templated.py wmt24 ...`` with the same
``out_dir=``); nothing is shown when that file is absent. Rendered under the templated suite's section.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from gnt.filenames import LEAKAGE, SUMMARY
from gnt.io import read_json
from gnt.report.blocks import Heading, Image, Para, Table


def _ci(stat: dict | None, signed: bool = True) -> str:
    if not stat or stat.get("value") is None:
        return "—"
    fmt = "{:+.3f}" if signed else "{:.3f}"
    text = fmt.format(stat["value"])
    if stat.get("ci"):
        text += " [" + ", ".join(fmt.format(x) for x in stat["ci"]) + "]"
    if stat.get("p_value") is not None:
        text += f" p={stat['p_value']:.3f}"
    return text


def _name(name: str, entry: dict) -> str:
    return name + (" (ours)" if entry.get("kind") == "model" else "") + (" †" if entry.get("flags") else "")


def wmt24_blocks(directory: Path, figures: Path, data: dict) -> list[Any]:
    """Heading, Tables 4-6 and Table 7 (systems by ΔN on omission), the placement of our models, the ranking
    figure and the leakage note; [] without results."""
    path = directory / "wmt24" / SUMMARY
    if not path.is_file():
        return []
    summary = read_json(path)
    systems = summary.get("systems", {})

    def key(item: tuple[str, dict]) -> float:
        value = item[1]["tables"]["omission"]["delta"]["N"].get("value")
        return -(value if value is not None else -9.0)

    ordered = sorted(systems.items(), key=key)
    rows, stereo, kept = [], [], {}
    for name, entry in ordered:
        tables, unknowns = entry["tables"], entry["unknowns"]["in_tables"]
        rows.append([_name(name, entry), _ci(tables["omission"]["delta"]["N"]), _ci(tables["omission"]["delta"]["M"]),
                     _ci(tables["active"]["delta"]["N"]), _ci(tables["active"]["delta"]["M"]),
                     _ci(tables["strategies"]["determined"]["N"], signed=False),
                     _ci(tables["strategies"]["determined"]["N3"], signed=False),
                     f"{unknowns['unknown'] / unknowns['n_items']:.1%}" if unknowns["n_items"] else "—"])
        contrasts = entry["stereotype"]["contrasts"]
        stereo.append([_name(name, entry), _ci(contrasts["masculine_vs_none"]["M"]),
                       _ci(contrasts["feminine_vs_none"]["F"]), _ci(contrasts["feminine_vs_none"]["N"])])
        kept[name] = {"kind": entry.get("kind"), "dN_omission": tables["omission"]["delta"]["N"],
                      "dN_active": tables["active"]["delta"]["N"], "N_det": tables["strategies"]["determined"]["N"],
                      "flags": entry.get("flags", [])}
    data["wmt24"] = {"lang": summary.get("lang"), "systems": kept}
    lang = summary.get("lang", "?")
    blocks: list[Any] = [
        Heading(3, f"WMT24 gender-resolution suite (en-{lang})"),
        Table(["system", "ΔN omission (T4)", "ΔM omission (T4)", "ΔN they (T5)", "ΔM they (T5)", "N_det (T6)",
               "N3 det (T6)", "unknown"], rows,
              "Dawkins et al. (2025) dialogue suite, their Tables 4-6: Δ = ambiguous − determined share, each side "
              "macro-averaged over its template types; 95% bootstrap CI over segments; proportions of classified "
              "adjective slots; our models marked (ours), systems with most outputs unusable marked †.",
              name="wmt24"),
        Table(["system", "ΔM masculine adverb", "ΔF feminine adverb", "ΔN feminine adverb"], stereo,
              "Their Table 7: template 7 (\"I think I'm A,\" I said [adverb]) with a stereotyped adverb minus no "
              "adverb; CI and two-sided p-value paired per adjective.", name="wmt24_stereotype"),
    ]
    placed = [(name, entry) for name, entry in ordered if entry.get("placement")]
    if placed:
        place_rows = [[name, f"{table}/{statistic}", _ci(stat), f"{stat['rank']} of {stat['of']}" if stat["rank"] else "—",
                       str(len(stat["above"])), str(len(stat["below"]))]
                      for name, entry in placed for table, stats in entry["placement"].items()
                      for statistic, stat in stats.items()]
        blocks.append(Table(["model", "statistic", "value [95% CI]", "rank", "systems above", "systems below"],
                            place_rows, "Our models among the WMT24 systems: rank 1 = highest value; above/below = "
                            "systems whose paired difference has p < alpha.", name="wmt24_placement"))
    for png in sorted((directory / "wmt24").glob("ranking_*.png")):
        dest = figures / "wmt24" / png.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(png, dest)
        blocks.append(Image(dest, f"WMT24 ranking — {png.stem}", "systems and our checkpoints on each table"))
    leakage = directory / "wmt24" / LEAKAGE
    if leakage.is_file():
        overlap = read_json(leakage).get("in_project_templates", [])
        blocks.append(Para(f"{len(overlap)} of the suite's adjectives also occur in the project's templated "
                           f"training data ({', '.join(overlap[:12])}{' …' if len(overlap) > 12 else ''}); "
                           "per-checkpoint overlap in wmt24/leakage.json.", "note"))
    return blocks
