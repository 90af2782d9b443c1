"""Thin DVC entry points: parse arguments, read params, call the library, write outputs."""
