"""The stages' shared entry-point behaviour: :mod:`pipeline.entrypoint` (one place for the command
line and the stages)."""

from pipeline.entrypoint import add_logging_options, run, setup_logging

__all__ = ["add_logging_options", "dataset_entry", "run", "setup_logging"]


def dataset_entry(args):
    """The validated params and the ``datasets.<args.name>`` entry."""
    from pipeline import params as P

    params = P.load(args.params, [("datasets", args.name)])
    if args.name not in params.datasets:
        raise P.ParamsError(f"{args.params}: datasets.{args.name}: no such dataset")
    return params, params.datasets[args.name]


def load_params(path, *keys):
    """The raw section ``keys`` of a params file (the training stage's until it validates its own)."""
    from pipeline.params import ParamsError, load

    params = load(path, [("train", keys[1])] if len(keys) > 1 else [])
    node = {"train": params.train_entries}.get(keys[0]) if keys else None
    for key in keys[1:]:
        if not isinstance(node, dict) or key not in node:
            raise ParamsError(f"{path}: no params section {'.'.join(keys)!r}")
        node = node[key]
    return node
