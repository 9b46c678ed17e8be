"""`python -m webapp_operator --help`: run the operator (see `config` for the flags)."""

import sys

from webapp_operator.manager import main

sys.exit(main())
