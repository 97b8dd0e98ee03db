"""Hybrid search over a folder in two languages with a model that reads one (issue 38): a document
the model cannot read is judged fairly beside those it can, and neither language's answer falls
behind a page that only shares a word with the question."""

from __future__ import annotations

import pytest

from tests.notes import write_notes

# A help vault kept in English and German, as users keep one: each page in both languages.
HELP = {
    "en/sync.md": "# Syncing between devices\n\nTo keep your notes the same on your phone and your laptop, "
    "turn on Sync in the settings. Changes are uploaded every few minutes, and a conflict is kept as a copy.",
    "de/sync.md": "# Zwischen Geräten abgleichen\n\nDamit deine Notizen auf Telefon und Laptop gleich bleiben, "
    "schalte in den Einstellungen Sync ein. Änderungen werden alle paar Minuten hochgeladen, ein Konflikt "
    "bleibt als Kopie erhalten.",
    "en/paragraph.md": "# Formatting a paragraph\n\nSelect the text of a paragraph and choose a style: heading, "
    "quote or list. Indentation follows the paragraph above it.",
    "de/paragraph.md": "# Einen Absatz formatieren\n\nMarkiere den Text eines Absatzes und wähle eine Vorlage: "
    "Überschrift, Zitat oder Liste. Der Einzug folgt dem Paragraph darüber.",
    "en/export.md": "# Exporting notes\n\nExport writes every note as a Markdown file into a folder you choose; "
    "attachments are copied beside them.",
    "de/export.md": "# Notizen exportieren\n\nDer Export schreibt jede Notiz als Markdown-Datei in einen Ordner "
    "deiner Wahl; Anhänge werden daneben kopiert.",
    "en/trash.md": "# Deleted notes\n\nA deleted note stays in the trash for thirty days; restore it from there.",
    "de/trash.md": "# Gelöschte Notizen\n\nEine gelöschte Notiz bleibt dreißig Tage im Papierkorb; von dort "
    "lässt sie sich wiederherstellen.",
    "en/moving.md": "# Moving to Hamburg\n\nWe move to Hamburg in May. The van is booked, and Hamburg's "
    "registration office wants the new address within two weeks.",
    "de/umzug.md": "# Wohnungsübergabe\n\nAm Freitag ist die Wohnungsübergabe in Hamburg: Zählerstände "
    "ablesen, alle Schlüssel abgeben, das Protokoll mit dem Vermieter unterschreiben.",
    "en/garden.md": "# Garden\n\nTomatoes ripen faster in the sun; water them in the morning.",
    "en/bike.md": "# Bike\n\nReplace the chain every few thousand kilometres and oil it after rain.",
}


@pytest.fixture
def vault(tmp_path, index):
    index(write_notes(tmp_path / "help", HELP))


def paths(searcher, query: str, fusion: str) -> list[str]:
    return [hit.path for hit in searcher.search(query, k=10, fusion=fusion)]


@pytest.mark.parametrize("fusion", ["convex", "rrf"])
def test_an_english_question_finds_the_english_page_before_a_german_page_sharing_one_word(vault, searcher, fusion):
    for query, page in (
        ("how do I turn on sync on my phone", "en/sync.md"),
        ("how do I indent a paragraph", "en/paragraph.md"),
    ):
        found = paths(searcher, query, fusion)
        assert found[0] == page, (query, found)


@pytest.mark.parametrize("fusion", ["convex", "rrf"])
def test_a_german_question_finds_the_german_note_both_arms_rank_near_the_top(vault, searcher, fusion):
    """ "Wohnung übergeben Hamburg": the vector arm's first and the keyword arm's second once fell to
    the bottom (its min-max keyword score 0 was all that counted)."""
    found = paths(searcher, "Wohnung übergeben Hamburg", fusion)
    assert "de/umzug.md" in found[:2], found
