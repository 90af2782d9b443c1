"""Language normalization costs.

1. Indic: the pipeline's normalization of FLORES Hindi and Bangla lines (Unicode
   clean-up + indic-nlp-library normalizer), against the bare indic-nlp normalizer on
   the same lines, same run; target overhead <= 30 %.
2. Mandarin: IWSLT zh text through normalization, jieba segmentation (jieba-rs) and
   labelling, characters per second on one core (target >= 0.6 M chars/s); the Python
   jieba package alone, and jieba-rs alone, timed in the same run as baselines.
"""

from __future__ import annotations

import time

import pyarrow as pa
from _common import corpus_root, save_results


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    shared = corpus_root()
    rows, metrics = [], {}
    from indicnlp.normalize.indic_normalize import IndicNormalizerFactory

    from pipeline.text.labelling import label_lines
    from pipeline.text.languages import get_language

    for code, name in (("hi", "hin_Deva"), ("bn", "ben_Beng")):
        text = (shared / "indic" / "flores" / f"{name}.devtest").read_text(encoding="utf-8")
        lines = text.split("\n") * 20
        language = get_language(code)
        bare = IndicNormalizerFactory().get_normalizer(code, remove_nuktas=False)
        t_bare = best_of(lambda bare=bare, lines=lines: [bare.normalize(line) for line in lines], repeat=9)
        t_ours = best_of(lambda language=language, lines=lines: language.normalize(pa.array(lines)), repeat=9)
        print(
            f"{code}: {len(lines):,} lines  bare indic-nlp {t_bare:.3f} s  pipeline {t_ours:.3f} s"
            f"  overhead {100 * (t_ours / t_bare - 1):+.1f} % (target <= +30 %)"
        )
        rows.append(
            [
                f"{code}: normalization of FLORES x20 ({len(lines):,} lines)",
                f"{t_ours:.3f} s",
                f"{t_bare:.3f} s (bare indic-nlp normalizer)",
                f"{100 * (t_ours / t_bare - 1):+.1f} % time",
            ]
        )
        metrics[code] = {"lines": len(lines), "pipeline_s": t_ours, "bare_indic_nlp_s": t_bare}

    zh = get_language("zh")
    text = (
        "\n".join(
            (shared / "iwslt_zh" / f).read_text(encoding="utf-8")
            for f in ("iwslt2010_dev_zh.txt", "iwslt2011_test_zh.txt", "iwslt2012_test_zh.txt")
        )
        * 3
    )
    chars = len(text)
    zh.tokenize("预热")  # load jieba's dictionary outside the timing
    t_pipeline = best_of(lambda: label_lines(zh.normalize_text(text), zh), repeat=2)
    import logging

    import jieba

    from pipeline.text.languages.zh import segmenter

    jieba.setLogLevel(logging.WARNING)
    python_jieba = jieba.Tokenizer()
    python_jieba.initialize()
    lines = text.split("\n")
    t_jieba = best_of(lambda: [python_jieba.lcut(line) for line in lines], repeat=2)
    rust_jieba = segmenter(None)
    t_rust = best_of(lambda: [rust_jieba.cut(line, True) for line in lines], repeat=2)
    print(
        f"zh: {chars:,} characters  pipeline {chars / t_pipeline / 1e6:.2f} M chars/s (target >= 0.6)"
        f"  segmentation alone: jieba-rs {chars / t_rust / 1e6:.2f}, Python jieba {chars / t_jieba / 1e6:.2f}"
        f" M chars/s  pipeline / Python jieba {t_jieba / t_pipeline:.2f}x"
    )
    rows.append(
        [
            f"zh: normalization, jieba-rs segmentation and labelling of IWSLT zh x3 ({chars / 1e6:.1f} M chars)",
            f"{chars / t_pipeline / 1e6:.2f} M chars/s",
            f"{chars / t_jieba / 1e6:.2f} M chars/s (Python jieba segmentation alone); "
            f"jieba-rs alone {chars / t_rust / 1e6:.2f}",
            f"{t_jieba / t_pipeline:.2f}x",
        ]
    )
    metrics["zh"] = {"chars": chars, "pipeline_s": t_pipeline, "python_jieba_s": t_jieba, "jieba_rs_s": t_rust}
    save_results(
        "languages",
        title="Languages",
        what="Indic normalization (Unicode clean-up and indic-nlp-library) and Mandarin segmentation and labelling, "
        "one core, best of several timings",
        baseline="the bare indic-nlp normalizer line by line, and Python jieba, on the same text in the same run",
        columns=["what", "pipeline", "baseline", "pipeline against baseline"],
        rows=rows,
        metrics=metrics,
    )


if __name__ == "__main__":
    main()
