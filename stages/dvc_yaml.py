"""Generate the DVC pipeline (``dvc.yaml``) from a params file: one stage per entry, every path on
the command line, and deps that are exactly what the stage runs.

Code deps come from the stage module's imports, followed through the project's packages (an
import inside a function counts: it may run).  Packages whose modules are chosen at run time
(readers, languages, grammars, g2p) are left out of that walk and added per entry: the entry's
reader, its language's module, the grammars only when it speaks numbers.  Data deps are the
entry's inputs, its language's lexicons and any file its params name (a jieba dictionary, an
outlet list, a confusable vocabulary).

``python -m stages.dvc_yaml`` writes ``dvc.yaml`` (from ``params.yaml``) and ``real/dvc.yaml``
(from ``real/params.yaml``, run from the project root with ``wdir: ..``); ``--check`` fails if
either differs from what it would write (a test runs it).  ``make repro`` regenerates first, so
adding an entry to the params file is all it takes.
"""

from __future__ import annotations

import argparse
import ast
import functools
import shlex
import sys
from pathlib import Path

import yaml

from pipeline.labels import DEFAULT_LABEL_SET

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pipeline", "corpora", "stages")


@functools.cache
def chosen_at_run_time() -> frozenset[str]:
    """Modules a stage loads by name from its params (a reader, a language, a grammar, a g2p) or only
    for some entries (the spoken-form step): the import walk leaves them out, the entry adds them."""
    from pipeline.ingest import readers
    from pipeline.text.languages import available_languages

    names = {*readers().values(), "pipeline.text.spoken", "pipeline.text.verbalize"}
    names |= {f"pipeline.text.languages.{code}" for code in available_languages()}
    names |= {
        f"pipeline.text.verbalize.{p.stem}"
        for p in (ROOT / "pipeline/text/verbalize").glob("*.py")
        if p.stem != "__init__"
    }
    names |= {
        f"pipeline.phonetics.g2p.{p.stem}"
        for p in (ROOT / "pipeline/phonetics/g2p").glob("*.py")
        if p.stem != "__init__"
    }
    return frozenset(names)


def _module_file(name: str) -> Path | None:
    path = ROOT / Path(*name.split("."))
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return None


def _imports(name: str) -> set[str]:
    """Project modules imported anywhere in module ``name`` (its package's __init__ included)."""
    file = _module_file(name)
    package = name if file is not None and file.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            if target.split(".")[0] in PACKAGES and _module_file(target) is not None:
                found.add(target)
    parts = name.split(".")
    found |= {".".join(parts[:k]) for k in range(1, len(parts)) if _module_file(".".join(parts[:k]))}
    return found


@functools.cache
def closure(*modules: str) -> tuple[str, ...]:
    """The files of ``modules`` and of every project module they import, but the modules chosen at
    run time that are not among ``modules`` (:func:`chosen_at_run_time`)."""
    seen: set[str] = set()
    todo = list(modules)
    chosen = chosen_at_run_time()
    files = set()
    skip = chosen - set(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        # a chosen module's own imports are static (the transcript reader uses the text reader's code)
        todo += [m for m in _imports(name) if m not in seen and (name in chosen or m not in skip)]
        if name == "pipeline.text.lexicon":  # it finds its data through the lexicons package
            files.add("lexicons/__init__.py")
        if name == "pipeline.labels":  # it reads the default label set's table when imported
            files |= {"lexicons/__init__.py", f"lexicons/label_sets/{DEFAULT_LABEL_SET}.tsv"}
    return tuple(sorted({str(_module_file(m).relative_to(ROOT)) for m in seen} | files))


def _registered(lang: str, part: str) -> list[str]:
    """The language registry's module of ``part`` for ``lang``, where it is one of this project's
    (a plugin's modules are an installed package's, not files of this repository)."""
    from pipeline.text import registry

    entry = registry.lookup(lang)
    name = getattr(entry, part) if entry is not None else None
    return [name] if name and _module_file(name) else []


def _language_modules(lang: str) -> list[str]:
    return _registered(lang, "language")


def _grammar_modules(lang: str) -> list[str]:
    """The verbalizer and the language's grammar, if it has one."""
    return ["pipeline.text.verbalize", *_registered(lang, "verbalizer")]


def _g2p_modules(lang: str) -> list[str]:
    from pipeline.phonetics.g2p import g2p_module

    g2p_module(lang)  # no converter for the language: the params error, here too
    return ["pipeline.phonetics.g2p", *_registered(lang, "g2p")]


def _under(path: str, folders: list[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def _deps(*groups) -> list[str]:
    out: list[str] = []
    for group in groups:
        for item in group:
            if item and item not in out and not _under(item, [d for d in out if not d.endswith(".py")]):
                out.append(item)
    return out


class Layout:
    """Where a pipeline's files go, relative to the directory DVC runs the commands in."""

    def __init__(self, params: str, data: str, reports: str, lexicons: str, models: str, wdir: str | None):
        self.params, self.data, self.reports, self.lexicons, self.models, self.wdir = (
            params,
            data,
            reports,
            lexicons,
            models,
            wdir,
        )

    def segments(self, name: str) -> str:
        return f"{self.data}/segments/{name}.parquet"

    def dataset(self, name: str, part: str) -> str:
        return f"{self.data}/datasets/{name}/{part}"


def _label_set_file(spec: str) -> str:
    """The table of the label set ``spec``: a built-in's file, or the path given."""
    from pipeline.labels import label_set_file

    path = label_set_file(spec)
    return str(path.relative_to(ROOT)) if path.is_absolute() and path.is_relative_to(ROOT) else str(path)


def _protocol_file(name: str) -> str | None:
    """A paper protocol's file (its rules and published tables): none for ``papers``."""
    from pipeline.text.protocols import PAPERS

    return None if name == PAPERS else f"lexicons/protocols/{name}.yaml"


def _lexicon_dirs(lang: str) -> list[str]:
    return ["lexicons/common", *([f"lexicons/{lang}"] if (ROOT / "lexicons" / lang).is_dir() else [])]


def _has_key(document: dict, dotted: str) -> bool:
    node = document
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def command(module: str | None, *words: str) -> str:
    """``python -m module words...`` (None: the words alone), every word quoted for the shell: the
    names are checked against a safe pattern already, a path from a params file is not."""
    head = f"python -m {module} " if module else ""
    return head + " ".join(shlex.quote(str(w)) for w in words)


class _Stages:
    """The stages being written: each one's body in the order DVC lists its keys."""

    def __init__(self, layout: Layout, document: dict | None):
        self.layout, self.document, self.out = layout, document, {}

    def add(self, name, cmd, deps, outs, param_keys=(), extra=None) -> None:
        body = {}
        if self.layout.wdir:
            body["wdir"] = self.layout.wdir
        body["cmd"] = cmd
        body["deps"] = deps
        if self.document is not None:
            param_keys = [k for k in param_keys if _has_key(self.document, k)]
        if param_keys:
            p = self.layout.params
            body["params"] = [{p: list(param_keys)}] if p != "params.yaml" else list(param_keys)
        body["outs"] = outs
        body.update(extra or {})
        self.out[name] = body


def _nocache(path: str) -> dict:
    return {path: {"cache": False}}


def _ingest_stages(params, stages: _Stages) -> None:
    from pipeline.ingest import readers

    layout = stages.layout
    p, data = layout.params, layout.data
    for name, entry in params.corpus_entries.items():
        modules = ["stages.ingest", readers()[entry.reader], *_language_modules(entry.lang)]
        if entry.spoken:
            modules += [*_grammar_modules(entry.lang), "pipeline.text.spoken"]
        files = [entry.user_dict, entry.model_dump().get("sources"), _label_set_file(entry.label_set)]
        files.append(_protocol_file(entry.protocol))
        stages.add(
            f"ingest-{name}",
            command("stages.ingest", name, "--params", p, "--out", layout.segments(name))
            + " "
            + command(None, "--stats", f"{data}/stats/{name}.json"),
            _deps([entry.input], closure(*modules), _lexicon_dirs(entry.lang), [f for f in files if f]),
            [layout.segments(name), _nocache(f"{data}/stats/{name}.json")],
            [f"corpora.{name}"],
        )


def _align_stages(params, stages: _Stages) -> None:
    layout = stages.layout
    p, data = layout.params, layout.data
    for name, entry in params.alignments.items():
        lang = entry.lang or params.corpus_entries[entry.hyp].lang
        modules = ["stages.align", *_grammar_modules(lang)]
        ref, hyp = layout.segments(entry.ref), layout.segments(entry.hyp)
        stages.add(
            f"align-{name}",
            command("stages.align", name, "--params", p, "--ref", ref, "--hyp", hyp)
            + " "
            + command(None, "--out", layout.segments(name), "--report", f"{data}/alignment/{name}.json"),
            _deps(
                [ref, hyp, *([entry.pairs] if entry.pairs else [])],
                closure(*modules),
                [f"lexicons/{lang}"] if (ROOT / "lexicons" / lang).is_dir() else [],
            ),
            [layout.segments(name), _nocache(f"{data}/alignment/{name}.json")],
            [f"alignments.{name}"],
        )


def _confusables_stages(params, stages: _Stages) -> None:
    layout = stages.layout
    p, data = layout.params, layout.data
    for name, entry in params.confusables.items():
        vocab = layout.segments(entry.corpus) if entry.corpus else entry.word_list
        target = f"{layout.lexicons}/confusables/{name}.parquet"
        stages.add(
            f"confusables-{name}",
            command("stages.confusables", name, "--params", p, "--vocab", vocab, "--out", target)
            + " "
            + command(None, "--report", f"{data}/confusables/{name}.json"),
            _deps(
                [vocab],
                closure("stages.confusables", *_g2p_modules(entry.lang), *_language_modules(entry.lang)),
                _lexicon_dirs(entry.lang),
            ),
            [target, _nocache(f"{data}/confusables/{name}.json")],
            [f"confusables.{name}"],
        )


def _dataset_stages(params, stages: _Stages) -> None:
    """Per dataset: split, oversample, sequences and (when it names formats) export."""
    layout = stages.layout
    p, data = layout.params, layout.data
    for name, entry in params.datasets.items():
        d = functools.partial(layout.dataset, name)
        fixed = [*entry.split.test_corpora, *entry.split.fixed]
        stages.add(
            f"split-{name}",
            command("stages.split", name, "--params", p, "--segments-dir", f"{data}/segments")
            + " "
            + command(None, "--out", d("split.parquet"), "--report", d("split_report.json")),
            _deps([layout.segments(c) for c in [*entry.corpora, *fixed]], closure("stages.split")),
            [d("split.parquet"), _nocache(d("split_report.json"))],
            [f"datasets.{name}.corpora", f"datasets.{name}.split"],
        )
        augment = entry.oversample.augment
        confusables = (
            f"{layout.lexicons}/confusables/{augment.confusables}.parquet" if augment and augment.confusables else None
        )
        stages.add(
            f"oversample-{name}",
            command("stages.oversample", name, "--params", p, "--in", d("split.parquet"))
            + " "
            + command(None, "--out", d("oversampled.parquet"), "--augmented", d("augmented.parquet"))
            + " "
            + command(None, "--report", d("oversample_report.json"))
            + (" " + command(None, "--confusables", confusables) if confusables else ""),
            _deps([d("split.parquet"), confusables], closure("stages.oversample")),
            [d("oversampled.parquet"), d("augmented.parquet"), _nocache(d("oversample_report.json"))],
            [f"datasets.{name}.oversample", f"datasets.{name}.split.seed"],
        )
        stages.add(
            f"sequences-{name}",
            command("stages.sequences", name, "--params", p, "--in", d("oversampled.parquet"))
            + " "
            + command(
                None, "--out", d("sequences.parquet"), "--tokenizer", d("tokenizer"), "--report", d("report.json")
            )
            + " "
            + command(None, "--reports", d("split_report.json"), d("oversample_report.json")),
            _deps(
                [d("oversampled.parquet"), d("split_report.json"), d("oversample_report.json")],
                closure("stages.sequences"),
            ),
            [d("sequences.parquet"), d("tokenizer"), _nocache(d("report.json"))],
            [f"datasets.{name}.sequences"],
        )
        if entry.export.formats:
            stages.add(
                f"export-{name}",
                command("stages.export", name, "--params", p, "--in", d("oversampled.parquet"), "--out", d("export")),
                _deps([d("oversampled.parquet")], closure("stages.export")),
                [d("export")],
                [f"datasets.{name}.export"],
            )


def _train_plots(reports: str, name: str) -> dict:
    """A train stage's metrics and plots: the loss per step and the dev confusion matrix."""
    return {
        "metrics": [_nocache(f"{reports}/train_{name}.json")],
        "plots": [
            {f"{reports}/train_{name}_steps.csv": {"cache": False, "x": "step", "y": "loss"}},
            {
                f"{reports}/train_{name}_confusion.csv": {
                    "cache": False,
                    "template": "confusion_normalized",
                    "x": "predicted",
                    "y": "actual",
                }
            },
        ],
    }


def _train_stages(params, stages: _Stages) -> None:
    layout = stages.layout
    p, reports = layout.params, layout.reports
    for name, entry in params.train_entries.items():
        d = functools.partial(layout.dataset, entry.dataset)
        aug = entry.augmentation
        confusables = (
            f"{layout.lexicons}/confusables/{aug.confusables}.parquet"
            if aug is not None and aug.kind == "3r" and aug.confusables
            else None
        )
        # segments are read only to draw augmentation or to carry case labels
        segments = [d("oversampled.parquet")] if aug is not None or entry.capitalization else []
        stages.add(
            f"train-{name}",
            command("stages.train", name, "--params", p, "--dataset", f"{layout.data}/datasets/{entry.dataset}")
            + (" " + command(None, "--confusables", confusables) if confusables else "")
            + " "
            + command(None, "--model-dir", f"{layout.models}/{name}", "--metrics", f"{reports}/train_{name}.json")
            + " "
            + command(None, "--plots-dir", reports),
            _deps(
                [d("sequences.parquet"), d("tokenizer"), *segments, *([confusables] if confusables else [])],
                closure("stages.train"),
            ),
            [f"{layout.models}/{name}"],
            [f"train.{name}"],
            _train_plots(reports, name),
        )


def _export_model_stages(params, stages: _Stages) -> None:
    layout = stages.layout
    for name, entry in params.export_model.items():
        model, exported = f"{layout.models}/{name}", f"{layout.models}/{name}-{entry.format}"
        stages.add(
            f"export-model-{name}",
            command("stages.export_model", name, "--params", layout.params, "--model", model, "--out", exported),
            _deps([model], closure("stages.export_model")),
            [exported],
            [f"export_model.{name}"],
        )


def _share_plot(reports: str, name: str, x: str, y: str, template: str) -> dict:
    return {f"{reports}/{name}.csv": {"cache": False, "x": x, "y": y, "template": template}}


def _audit_stage(params, stages: _Stages) -> None:
    layout = stages.layout
    data, reports = layout.data, layout.reports
    stages.add(
        "audit",
        command("stages.audit", "--params", layout.params, "--data-dir", data, "--out", reports),
        _deps(
            [layout.segments(n) for n in params.segment_names()],
            [f"{data}/alignment/{n}.json" for n in params.alignments],
            [layout.dataset(n, "report.json") for n in params.datasets],
            closure("stages.audit"),
            sorted({f for e in params.corpus_entries.values() if (f := _protocol_file(e.protocol))}),
        ),
        [_nocache(f"{reports}/audit.html"), _nocache(f"{reports}/table1.md"), _nocache(f"{reports}/paper_tables.json")],
        extra={
            "metrics": [_nocache(f"{reports}/audit.json")],
            "plots": [
                _share_plot(reports, "label_shares", "label", "share", "bar_horizontal"),
                _share_plot(reports, "case_shares", "case", "share", "bar_horizontal"),
                _share_plot(reports, "sentence_lengths", "sentence_length", "sentences", "bar_horizontal_sorted"),
            ],
        },
    )


def stages(params, layout: Layout, document: dict | None = None) -> dict:
    """The stages of the pipeline of ``params`` (a validated :class:`pipeline.params.Params`).

    ``document``: the params file as written.  DVC tracks only keys present in the file, so a key
    left to its default is not listed (the default lives in ``pipeline/params.py``, a dep)."""
    out = _Stages(layout, document)
    for add in (
        _ingest_stages,
        _align_stages,
        _confusables_stages,
        _dataset_stages,
        _train_stages,
        _export_model_stages,
        _audit_stage,
    ):
        add(params, out)
    return out.out


PIPELINES = {
    "dvc.yaml": (
        "params.yaml",
        Layout("params.yaml", "data", "reports", "lexicons", "models", None),
        "# The default pipeline over the embedded samples, generated from params.yaml by\n"
        "# `python -m stages.dvc_yaml` (`make repro` runs it first): do not edit, edit params.yaml.\n",
    ),
    "real/dvc.yaml": (
        "real/params.yaml",
        Layout("real/params.yaml", "real/data", "real/reports", "real/lexicons", "real/models", ".."),
        "# The real-corpora pipeline (../shared/corpora), generated from real/params.yaml by\n"
        "# `python -m stages.dvc_yaml`: do not edit.  Run from the project root: `make repro-real`\n"
        "# (regenerates it first).\n",
    ),
}


def render(target: str) -> str:
    from pipeline.params import load, load_yaml

    params_file, layout, header = PIPELINES[target]
    document = load_yaml((ROOT / params_file).read_text(encoding="utf-8"), params_file) or {}
    body = yaml.safe_dump({"stages": stages(load(ROOT / params_file), layout, document)}, sort_keys=False, width=120)
    return header + body


def main(argv=None) -> int:
    import os

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if a dvc.yaml differs from what would be written")
    args = parser.parse_args(argv)
    os.chdir(ROOT)  # paths in the params files are relative to the project root
    stale = []
    for target in PIPELINES:
        text = render(target)
        path = ROOT / target
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            if args.check:
                stale.append(target)
            else:
                path.write_text(text, encoding="utf-8")
                print(f"wrote {target}", file=sys.stderr)
    if stale:
        print(
            f"error: {', '.join(stale)} out of date with the params: run `python -m stages.dvc_yaml`", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    from pipeline.entrypoint import run

    sys.exit(run(main))
