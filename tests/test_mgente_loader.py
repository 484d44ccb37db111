"""mGeNTE loading from TSV files and directories, and every validation error a user can hit."""

from __future__ import annotations

from pathlib import Path

import pytest

from gnt.data.errors import DataError, DataErrors
from gnt.data.mgente import MGENTE_COLUMNS, load_mgente, parse_gendered_words, read_directory, read_tsv

HEADER = "\t".join(MGENTE_COLUMNS)
GOOD_ROWS = [
    ["IT-1", "ep-1", "Set-G", "Mrs Haug is tired.", "La signora Haug è stanca.", "Haug è affaticata.", "True", "F",
     "La <F>signora</F> Haug è <F>stanca</F>.", "signora; stanca"],
    ["IT-2", "ep-2", "Set-N", "The citizens are tired.", "I cittadini sono stanchi.", "La cittadinanza è stanca.",
     "True", "", "I <M>cittadini</M> sono <M>stanchi</M>.", ""],
]


def write_tsv(path: Path, rows: list[list[str]], header: str = HEADER) -> Path:
    path.write_text(header + "\n" + "".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def errors_of(excinfo: pytest.ExceptionInfo) -> list[DataError]:
    exc = excinfo.value
    return exc.errors if isinstance(exc, DataErrors) else [exc]


def test_tsv_loads_typed_entries(tmp_path: Path) -> None:
    entries = read_tsv(write_tsv(tmp_path / "en-it.tsv", GOOD_ROWS))
    first, second = entries
    assert (first.lang, first.set, first.gender, first.europarl_id) == ("it", "Set-G", "F", "ep-1")
    assert first.ref_n == ("Haug è affaticata.",) and first.in_common
    assert first.gendered_words == ("signora", "stanca")
    assert second.gender is None and second.label == "NEUTRAL"
    # gendered words fall back to the <M> tags of REF-G_ann when G-WORDS is empty
    assert second.gendered_words == ("cittadini", "stanchi")


def test_optional_columns_may_be_absent(tmp_path: Path) -> None:
    header = "ID\tSET\tSRC\tREF-G\tREF-N\tGENDER"
    rows = [["1", "Set-N", "We are ready.", "Siamo pronti.", "Siamo in grado di iniziare.", ""]]
    (entry,) = read_tsv(write_tsv(tmp_path / "en-it.tsv", rows, header))
    assert entry.gendered_words == () and entry.europarl_id == "" and not entry.in_common


def test_directory_and_common_references(tmp_path: Path) -> None:
    write_tsv(tmp_path / "en-it.tsv", GOOD_ROWS)
    write_tsv(tmp_path / "en-es.tsv", [[c.replace("IT-", "ES-") for c in r] for r in GOOD_ROWS])
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "en-it.tsv").write_text(
        "ID\tREF-N1\tREF-N2\tREF-N3\nIT-2\tLa cittadinanza è stanca.\tChi è cittadino è stanco.\tLe persone sono stanche.\n"
    )
    entries = read_directory(tmp_path, ["it", "es"])
    assert {e.lang for e in entries} == {"it", "es"}
    common = next(e for e in entries if e.id == "IT-2")
    assert common.ref_n[0] == "La cittadinanza è stanca." and len(common.ref_n) == 3
    assert load_mgente(tmp_path, ["es"])[0].lang == "es"


def test_missing_language_file_is_named(tmp_path: Path) -> None:
    write_tsv(tmp_path / "en-it.tsv", GOOD_ROWS)
    with pytest.raises(DataError, match="missing en-de.tsv"):
        read_directory(tmp_path, ["it", "de"])


@pytest.mark.parametrize(
    ("mutate", "line", "column", "message"),
    [
        (lambda r: r[0].__setitem__(2, "Set-X"), 2, "SET", "unknown SET value 'Set-X'"),
        (lambda r: r[0].__setitem__(7, ""), 2, "GENDER", "GENDER must be F or M"),
        (lambda r: r[1].__setitem__(5, " "), 3, "REF-N", "empty REF-N"),
        (lambda r: r[1].__setitem__(0, "IT-1"), 3, "ID", "duplicate ID 'IT-1' (first on line 2)"),
    ],
)
def test_row_errors_name_file_line_column(tmp_path: Path, mutate, line: int, column: str, message: str) -> None:
    rows = [list(r) for r in GOOD_ROWS]
    mutate(rows)
    path = write_tsv(tmp_path / "en-it.tsv", rows)
    with pytest.raises(DataErrors) as excinfo:
        read_tsv(path)
    (error,) = errors_of(excinfo)
    assert (error.path, error.line, error.column) == (str(path), line, column)
    assert message in str(error) and str(error).startswith(f"{path}:{line}:{column}: ")


def test_all_errors_reported_at_once(tmp_path: Path) -> None:
    rows = [list(r) for r in GOOD_ROWS]
    rows[0][2] = "bad"
    rows[1][5] = ""
    with pytest.raises(DataErrors) as excinfo:
        read_tsv(write_tsv(tmp_path / "en-it.tsv", rows))
    assert [e.line for e in errors_of(excinfo)] == [2, 3]


def test_a_malformed_row_does_not_hide_the_other_rows_errors(tmp_path: Path) -> None:
    rows = [list(r) for r in GOOD_ROWS]
    rows[0][2] = "Set-X"
    rows[1] = rows[1][:5]
    path = write_tsv(tmp_path / "en-it.tsv", rows)
    with pytest.raises(DataErrors) as excinfo:
        read_tsv(path)
    assert [(e.line, e.column) for e in errors_of(excinfo)] == [(2, "SET"), (3, "REF-N")]


def test_every_language_files_errors_come_in_one_report(tmp_path: Path) -> None:
    bad_it = [list(r) for r in GOOD_ROWS]
    bad_it[0][2] = "Set-X"
    write_tsv(tmp_path / "en-it.tsv", bad_it)
    bad_es = [[c.replace("IT-", "ES-") for c in r] for r in GOOD_ROWS]
    bad_es[1][3] = ""
    write_tsv(tmp_path / "en-es.tsv", bad_es)
    with pytest.raises(DataErrors) as excinfo:
        read_directory(tmp_path, ["it", "es"])
    found = [(Path(e.path).name, e.line, e.column) for e in errors_of(excinfo)]
    assert found == [("en-it.tsv", 2, "SET"), ("en-es.tsv", 3, "SRC")]


def test_missing_column(tmp_path: Path) -> None:
    header = HEADER.replace("\tREF-N", "")
    rows = [[c for i, c in enumerate(r) if i != 5] for r in GOOD_ROWS]
    with pytest.raises(DataError) as excinfo:
        read_tsv(write_tsv(tmp_path / "en-it.tsv", rows, header))
    assert (excinfo.value.line, excinfo.value.column) == (1, "REF-N")
    assert "missing column(s) REF-N" in str(excinfo.value)


def test_wrong_delimiter(tmp_path: Path) -> None:
    path = tmp_path / "en-it.tsv"
    path.write_text(",".join(MGENTE_COLUMNS) + "\n" + ",".join(GOOD_ROWS[0]) + "\n")
    with pytest.raises(DataError, match="wrong delimiter.*comma-separated") as excinfo:
        read_tsv(path)
    assert excinfo.value.line == 1


def test_wrong_field_count(tmp_path: Path) -> None:
    rows = [list(r) for r in GOOD_ROWS]
    rows[1] = rows[1][:7]
    with pytest.raises(DataErrors) as excinfo:
        read_tsv(write_tsv(tmp_path / "en-it.tsv", rows))
    (error,) = errors_of(excinfo)
    assert error.line == 3 and "expected 10 tab-separated fields, found 7" in str(error)


def test_undecodable_text(tmp_path: Path) -> None:
    path = write_tsv(tmp_path / "en-it.tsv", GOOD_ROWS)
    data = path.read_bytes().replace(b"stanchi.", b"stanch\xe9.")
    path.write_bytes(data)
    with pytest.raises(DataError, match="undecodable text") as excinfo:
        read_tsv(path)
    assert excinfo.value.line == 3 and isinstance(excinfo.value.column, int)


def test_unknown_path_is_not_sent_to_the_hub(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file or directory"):
        load_mgente(tmp_path / "nope.tsv")


def test_gendered_words_formats() -> None:
    assert parse_gendered_words("cara, stanca", "") == ("cara", "stanca")
    assert parse_gendered_words("['caro'|'stanco']", "") == ("caro", "stanco")
    assert parse_gendered_words("", "Il <M>caro</M> amico") == ("caro",)
    assert parse_gendered_words("", "") == ()


# ---------------------------------------------------------------------------------------------------------------
# Files that used to load as junk or as nothing, silently
# ---------------------------------------------------------------------------------------------------------------


def test_duplicate_column_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "en-it.tsv"
    write_tsv(path, [[*r, "junk"] for r in GOOD_ROWS], HEADER + "\tSRC")
    with pytest.raises(DataError, match=r"en-it.tsv:1:SRC: duplicate column 'SRC' \(columns 4 and 11\)"):
        read_tsv(path)


def test_cr_only_line_endings_are_an_error(tmp_path: Path) -> None:
    path = tmp_path / "en-it.tsv"
    path.write_bytes((HEADER + "\r" + "".join("\t".join(r) + "\r" for r in GOOD_ROWS)).encode())
    with pytest.raises(DataError, match=r"en-it.tsv:1:\d+: carriage return without line feed"):
        read_tsv(path)
    path.write_bytes((HEADER + "\r\n" + "".join("\t".join(r) + "\r\n" for r in GOOD_ROWS)).encode())
    assert len(read_tsv(path)) == 2  # CRLF stays fine


def test_header_only_file_is_an_error(tmp_path: Path) -> None:
    path = write_tsv(tmp_path / "en-it.tsv", [])
    with pytest.raises(DataError, match=r"en-it.tsv:2: no data rows after the header"):
        load_mgente(path, ["it"])
    with pytest.raises(DataError, match="no data rows"):
        load_mgente(tmp_path, ["it"])


def test_languages_that_select_nothing_are_an_error(tmp_path: Path) -> None:
    path = write_tsv(tmp_path / "en-it.tsv", GOOD_ROWS)
    with pytest.raises(DataError, match=r"en-it.tsv: holds en-it rows only, and the languages asked for are es"):
        load_mgente(path, ["es"])
    with pytest.raises(DataError, match="no language selected"):
        load_mgente(path, [])
