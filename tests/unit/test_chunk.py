import random

import pytest

from pgrecall.worker.adapters import markdown
from pgrecall.worker.chunk import CHARS_PER_TOKEN, chunk_sections, split_blocks, token_budget
from pgrecall.worker.document import Section


@pytest.fixture(scope="module")
def count(embedder):
    return embedder.count_tokens


@pytest.fixture
def budget(settings, embedder):
    """What production chunks to: the default PGRECALL_CHUNK_TOKENS, capped by the model, less [CLS] and [SEP]."""
    return token_budget(settings.chunk_tokens, embedder.max_tokens)


@pytest.fixture(params=["setting", "model_limit"])
def any_budget(request, budget, embedder):
    """The production budget, and the largest the model allows (PGRECALL_CHUNK_TOKENS above its limit)."""
    return budget if request.param == "setting" else token_budget(10_000, embedder.max_tokens)


def _assert_within_limit(chunks, count, limit):
    for chunk in chunks:
        real = count([chunk.embedding_text])[0]
        assert real <= limit, (real, chunk.embedding_text[:80])
        assert chunk.token_count == real


def test_the_budget_is_the_setting_capped_by_the_model_less_two_special_tokens():
    assert token_budget(128, 256) == 126
    assert token_budget(512, 256) == 254
    assert token_budget(32, 512) == 30


def test_short_section_is_one_chunk_with_heading(count, budget):
    chunks = chunk_sections([Section("# A > ## B", "Hello world.")], count, max_tokens=budget)
    assert len(chunks) == 1
    assert chunks[0].heading == "# A > ## B"
    assert chunks[0].embedding_text == "# A > ## B\n\nHello world."


def test_long_text_is_split_within_the_limit_at_sentence_boundaries(count, any_budget):
    sentence = "Metalloproteinases degrade the extracellular matrix during tissue remodelling. "
    text = sentence * 120
    chunks = chunk_sections([Section("# Long", text)], count, max_tokens=any_budget)
    assert len(chunks) > 3
    _assert_within_limit(chunks, count, any_budget)
    for chunk in chunks:
        assert chunk.text.endswith(".")


def test_single_huge_sentence_and_word_still_fit(count, any_budget):
    text = " ".join(["antidisestablishmentarianism"] * 400) + " " + "x" * 5000
    chunks = chunk_sections([Section("", text)], count, max_tokens=any_budget)
    _assert_within_limit(chunks, count, any_budget)
    joined = " ".join(c.text for c in chunks)
    assert "antidisestablishmentarianism" in joined and "xxxx" in joined


def test_code_fence_is_kept_whole_when_it_fits(count, budget):
    code = "```python\ndef f():\n\n    return 1\n```"
    text = ("Intro paragraph. " * 60) + "\n\n" + code + "\n\nAfter."
    chunks = chunk_sections([Section("# Code", text)], count, max_tokens=budget)
    assert sum(code in c.text for c in chunks) == 1


def test_oversized_code_fence_is_split_by_lines(count, any_budget):
    code = "```\n" + "\n".join(f"value_{i} = compute_something({i})" for i in range(300)) + "\n```"
    chunks = chunk_sections([Section("", code)], count, max_tokens=any_budget)
    assert len(chunks) > 1
    _assert_within_limit(chunks, count, any_budget)


def test_split_blocks_respects_fences():
    blocks = split_blocks("one\n\n```\na\n\nb\n```\n\ntwo")
    assert blocks == ["one", "```\na\n\nb\n```", "two"]


def test_consecutive_chunks_share_a_short_overlap(count):
    paragraphs = [f"Paragraph {i} talks about topic {i} in a few words." for i in range(60)]
    chunks = chunk_sections([Section("", "\n\n".join(paragraphs))], count, max_tokens=80, overlap_tokens=20)
    assert len(chunks) > 2
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert after.text.split("\n\n")[0] == before.text.split("\n\n")[-1]


def test_markdown_sections_become_heading_paths(count, budget):
    doc = markdown.parse("n.md", "# Top\n\nintro\n\n## Sub\n\nbody\n\n```\n# not a heading\n```\n", "h")
    chunks = chunk_sections(doc.sections, count, max_tokens=budget)
    assert [c.heading for c in chunks] == ["# Top", "# Top > ## Sub"]
    assert "# not a heading" in chunks[1].text


def test_keyword_text_counts_each_word_once(count):
    """The overlap is for the model; the keyword index sees every word of the section once."""
    paragraphs = [f"Paragraph {i} talks about topic {i} in a few words." for i in range(60)]
    chunks = chunk_sections([Section("# H", "\n\n".join(paragraphs))], count, max_tokens=80, overlap_tokens=20)
    keyword_texts = [c.keyword_text(with_heading=c.ordinal == 0) for c in chunks]
    assert keyword_texts[0].startswith("# H\n\nParagraph 0 ")
    assert all(not text.startswith("# H") for text in keyword_texts[1:])
    rebuilt = "\n\n".join(text.removeprefix("# H\n\n") for text in keyword_texts)
    assert rebuilt == "\n\n".join(paragraphs)


def test_word_windows_mark_their_overlap(count):
    words = [f"word{i}" for i in range(400)]
    chunks = chunk_sections([Section("", " ".join(words))], count, max_tokens=60, overlap_tokens=10)
    assert len(chunks) > 3
    fresh_words = " ".join(c.keyword_text(with_heading=False) for c in chunks).split()
    assert fresh_words == words


@pytest.mark.slow  # tens of seconds of tokenizing 5 MB: not for make test-fast
@pytest.mark.timeout(300)
def test_a_long_line_without_spaces_is_bounded_in_characters(count, budget):
    """5 MB without a space is one [UNK] word piece: the token bound alone would keep it one chunk."""
    line = "y" * (5 * 1024 * 1024)
    chunks = chunk_sections(
        [Section("# " + "h" * 100_000, "before\n\n" + line + "\n\nafter")], count, max_tokens=budget
    )
    assert max(len(c.text) for c in chunks) <= CHARS_PER_TOKEN * budget
    assert max(len(c.heading) for c in chunks) <= CHARS_PER_TOKEN * 64
    _assert_within_limit(chunks[:3] + chunks[-3:], count, budget)
    # Nothing lost, nothing counted twice by the keyword index.
    assert sum(c.keyword_text(with_heading=False).count("y") for c in chunks) == len(line)
    assert chunks[0].text == "before" and chunks[-1].text.endswith("after")


def test_the_character_bound_changes_no_ordinary_chunk(count, any_budget):
    sentence = "Metalloproteinases degrade the extracellular matrix during tissue remodelling. "
    text = "\n\n".join(sentence * 5 for _ in range(30))
    bounded = chunk_sections([Section("# Long", text)], count, max_tokens=any_budget)
    unbounded = chunk_sections([Section("# Long", text)], count, max_tokens=any_budget, max_chars=10**9)
    assert bounded == unbounded


def _cut_before(chunks):
    known = {}
    for chunk in chunks:
        known.setdefault(chunk.section_key, []).append(chunk)
    return known


def test_unchanged_sections_take_their_chunks_as_cut_before_and_only_new_ones_are_counted(count):

    rng = random.Random(4711)
    words = [
        "the",
        "cell",
        "membrane",
        "protein",
        "binds",
        "a",
        "receptor.",
        "Results",
        "were",
        "significant",
        "(p",
        "=",
        "0.01).",
    ]

    def section(n):
        paragraphs = ["\n".join(" ".join(rng.choices(words, k=rng.randrange(5, 120))) for _ in range(2))]
        return Section(f"# Journal > ## Entry {n}", "\n\n".join(paragraphs * rng.randrange(1, 3)))

    sections = [section(n) for n in range(12)] + [Section("# Journal > ## Entry 0", "same text")] * 2
    chunks = chunk_sections(sections, count, max_tokens=60, overlap_tokens=10)
    for step in range(30):
        edited = list(sections)
        what = step % 4
        if what == 0:
            edited.append(section(100 + step))
        elif what == 1:
            edited.insert(rng.randrange(len(edited)), section(200 + step))
        elif what == 2:
            del edited[rng.randrange(len(edited))]
        else:
            edited.insert(rng.randrange(len(edited)), edited.pop(rng.randrange(len(edited))))
        counted: list[str] = []

        def counting(texts, counted=counted):
            counted.extend(texts)
            return count(texts)

        reused = chunk_sections(edited, counting, max_tokens=60, overlap_tokens=10, known=_cut_before(chunks))
        assert reused == chunk_sections(edited, count, max_tokens=60, overlap_tokens=10), (step, what)
        old_texts = {s.text for s in sections}
        new_text = "\n".join(s.text + s.heading for s in edited if s.text not in old_texts)
        assert all(text in new_text for text in counted), (step, what)
        if what == 0:
            assert counted, "the appended entry is cut"
        sections, chunks = edited, reused


def test_a_repeated_section_keeps_one_set_of_chunks_per_copy(count):
    twice = [Section("# A", "Alpha beta gamma. " * 40)] * 2
    chunks = chunk_sections(twice, count, max_tokens=30)
    assert len({c.section_key for c in chunks}) == 2
    once = chunk_sections(twice[:1], count, max_tokens=30, known=_cut_before(chunks))
    assert once == chunk_sections(twice[:1], count, max_tokens=30)
