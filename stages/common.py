"""The stages' shared entry-point behaviour: :mod:`pipeline.entrypoint` (one place for the command
line and the stages)."""

from pipeline.entrypoint import ArgumentParser, add_logging_options, run, setup_logging

__all__ = ["ArgumentParser", "add_logging_options", "dataset_entry", "run", "setup_logging"]


def dataset_entry(args):
    """The validated params and the ``datasets.<args.name>`` entry."""
    from pipeline import params as P

    params = P.load(args.params, [("datasets", args.name)])
    if args.name not in params.datasets:
        raise P.ParamsError(f"{args.params}: datasets.{args.name}: no such dataset")
    return params, params.datasets[args.name]
