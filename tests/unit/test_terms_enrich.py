from pgrecall.api.enrich import MAX_VARIANTS, key_terms, query_variants
from pgrecall.terms import identifier_terms


def test_identifiers_are_kept_whole_and_lower_cased():
    terms = identifier_terms("Error E-4711 in my_snake_case, CamelCaseName, config.yaml v1.2.3 src/app DEC-0054 2024")
    assert terms == ["e-4711", "my_snake_case", "camelcasename", "config.yaml", "v1.2.3", "src/app", "dec-0054"]


def test_plain_words_are_not_identifiers():
    assert identifier_terms("the quick brown fox jumps over 42 dogs") == []


def test_key_terms_are_words_the_tokenizer_splits(embedder):
    terms = key_terms("does metalloproteinase activity affect the heart", embedder.word_pieces)
    assert "metalloproteinase" in terms
    assert "heart" not in terms and "does" not in terms


def test_at_most_three_variants_starting_with_the_query(embedder):
    variants = query_variants("angiotensin converting enzyme inhibitors in nephropathy", embedder.word_pieces)
    assert variants[0] == "angiotensin converting enzyme inhibitors in nephropathy"
    assert 1 < len(variants) <= MAX_VARIANTS
    assert query_variants("the cat sat", embedder.word_pieces) == ["the cat sat"]
