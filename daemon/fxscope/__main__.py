"""``python -m fxscope`` runs the command line."""

import sys

from fxscope.cli.main import main

sys.exit(main())
