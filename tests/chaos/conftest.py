"""Like tests/run: an operator these tests started is stopped when the package is done."""

from tests.run.conftest import operator_left_as_found

__all__ = ["operator_left_as_found"]
