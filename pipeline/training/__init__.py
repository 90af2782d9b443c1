"""Training and inference: the train params (``config``), the streamed data path (``data``), the
model and its heads (``model``), the Accelerate loop and evaluation (``loop``), metrics (``metrics``) and
inference on words and text (``inference``).  Importing this package imports no torch.
"""

from pipeline._lazy import lazy_exports

__all__ = ["TrainParams", "build_model", "evaluate", "scores", "train"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {"TrainParams": "config", "train": "loop", "evaluate": "loop", "build_model": "model", "scores": "metrics"},
)
