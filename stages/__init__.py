"""Thin DVC entry points: parse arguments and call the command's function in ``pipeline.operations``
(the one the command line calls too)."""
