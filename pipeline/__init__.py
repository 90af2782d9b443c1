"""punct-corpora: punctuation-restoration corpora from raw text to labelled, audited datasets and models.

The library is layered; each part imports only its own package and the layers below it
(``tests/test_layers.py`` checks every import, lazy ones included):

1. ``errors`` (the error types a user sees), then ``labels`` (the label set), then ``schema``
   (the columns of every dataset);
2. ``engine``: files, URLs, shards, the executor that owns parallelism, the output transaction;
3. ``text``: normalization, labelling, case, the languages and their spoken forms;
4. ``ingest`` (a corpus's files through its reader), ``phonetics`` (g2p and confusables),
   ``audit`` (statistics, reports, the HTML page);
5. ``params``: the params file's schema, the one place defaults live;
6. ``align`` (reference punctuation onto transcripts) and ``datasets`` (split, oversample,
   augment, sequences, exports, pretrained tokenizers);
7. ``training``: the model, the loop, metrics, inference, ONNX export and the ``Punctuator`` API;
8. ``operations`` (one function per command, called by the CLI and the DVC stages alike) and
   ``entrypoint`` (one error line and exit status per failure);
9. ``cli``: the ``punct-corpora`` command line, which only parses and forwards.

Importing the package changes nothing in the process (the entry points set the environment they
need: :func:`pipeline.entrypoint.prepare_process`).
"""


def __getattr__(name: str):
    # read from the installed metadata on first use: importlib.metadata costs a command's start-up
    # (punctuate's) more than the rest of the package's import
    if name != "__version__":
        raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("punct-corpora")
    except PackageNotFoundError:  # a checkout run without installing it
        return "0+unknown"
