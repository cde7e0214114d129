"""``python -m djsb``: the ``djsb`` command."""

import sys

from djsb.cli import main

sys.exit(main())
