"""python -m agent.orchestration.soak: the soak's command (driver.main)."""

import sys

from agent.orchestration.soak.driver import main

sys.exit(main())
