"""Training and inference (its params: ``pipeline.params.TrainParams``): the refusals before the
first step (``checks``), the streamed data path (``data``), the model and its heads (``model``), the
Accelerate loop and evaluation (``loop``), metrics (``metrics``), inference on words and text
(``inference``), ONNX export (``onnx``), the checked reading of a model folder that both runtimes
load (``model_folder``) and the ``Punctuator`` API for applications (``punctuator``: a trained or an
exported model, lists of texts or a stream).  Importing this package imports no torch;
``Punctuator`` on an exported model never does.
"""

from pipeline._lazy import lazy_exports

__all__ = ["Punctuator", "build_model", "evaluate", "scores", "train"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Punctuator": "punctuator",
        "train": "loop",
        "evaluate": "loop",
        "build_model": "model",
        "scores": "metrics",
    },
)
