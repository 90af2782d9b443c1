"""Datasets made from segment datasets: ``split`` (train/dev/test by document hash), ``oversample``
and ``augment`` (question oversampling, 3R and Alam 2020 augmentation), ``sequences`` (word
counts, tokenizer training, packing into model-ready sequences), ``export`` (NeMo, xashru's
TSV, Hugging Face) and ``pretrained`` (pretrained models and tokenizers by name or folder: the
sequences stage tokenizes, and training finds its models the same way).
"""

from pipeline._lazy import lazy_exports

__all__ = ["export_datasets", "oversample_dataset", "sequences_dataset", "split_dataset"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "split_dataset": "split",
        "oversample_dataset": "oversample",
        "sequences_dataset": "sequences",
        "export_datasets": "export",
    },
)
