"""``python -m bmv2.pyswitch``: see ``bmv2.pyswitch.cli``."""

from bmv2.pyswitch.cli import main

raise SystemExit(main())
