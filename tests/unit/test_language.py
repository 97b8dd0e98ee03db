"""A document's language (pgrecall.worker.language) and the names of languages (pgrecall.languages)."""

import pytest

from pgrecall.embedders.embedder_base import bundled_model_path
from pgrecall.errors import ConfigurationError
from pgrecall.language_detection import detect
from pgrecall.languages import configuration_of, model_card_languages, parse_languages
from pgrecall.worker.language import document_language

GERMAN = "Der Zählerstand wird jeden Monat abgelesen und in die Tabelle eingetragen."
ENGLISH = "The meter reading is taken every month and written into the spreadsheet."


def test_german_and_english_notes_are_told_apart():
    assert detect(GERMAN) == "german"
    assert detect(ENGLISH) == "english"
    assert detect("Wie hoch ist der Zählerstand im Keller?") == "german"


def test_text_without_enough_letters_is_simple():
    assert detect("E-4711 0x1f 42") == "simple"
    assert detect("") == "simple"


def test_only_the_configured_languages_are_considered():
    french = "Le relevé du compteur est effectué chaque mois et noté dans le tableau."
    assert detect(french, ("en", "de", "fr")) == "french"
    assert detect(french, ("en", "de")) in {"english", "german", "simple"}
    assert detect(GERMAN, ("en",)) == "english"  # one language: nothing to detect


def test_front_matter_overrides_detection():
    assert document_language({"lang": "de"}, [ENGLISH]) == "german"
    assert document_language({"language": "English"}, [GERMAN]) == "english"
    assert document_language({"lang": "de-AT"}, [ENGLISH]) == "german"
    assert document_language({"lang": "simple"}, [GERMAN]) == "simple"
    assert document_language({"lang": "klingon"}, [GERMAN]) == "german"  # unknown: detected
    assert document_language({}, [GERMAN]) == "german"


@pytest.mark.parametrize(
    ("value", "codes"),
    [("en,de", ("en", "de")), (" de , EN ", ("de", "en")), ("german,english", ("de", "en")), ("fr", ("fr",))],
)
def test_languages_setting_is_parsed(value, codes):
    assert parse_languages(value) == codes


@pytest.mark.parametrize("value", ["", "xx", "en,klingon"])
def test_a_language_without_configuration_is_refused(value):
    with pytest.raises(ConfigurationError, match="PGRECALL_LANGUAGES"):
        parse_languages(value)


def test_configuration_names():
    assert configuration_of("DE") == "german"
    assert configuration_of("pt_BR") == "portuguese"
    assert configuration_of(3) is None


def test_the_bundled_models_card_names_english(tmp_path):
    assert model_card_languages(bundled_model_path()) == frozenset({"english"})
    assert model_card_languages(tmp_path) is None  # no card: every language counts as covered
    (tmp_path / "README.md").write_text("---\nlanguage:\n- de\n- en\nlicense: mit\n---\n# card\n")
    assert model_card_languages(tmp_path) == frozenset({"german", "english"})
    (tmp_path / "README.md").write_text("---\nlanguage: multilingual\n---\n")
    assert model_card_languages(tmp_path) is None
