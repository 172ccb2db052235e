"""The P4Runtime control plane of the in-network replay.

The P4Runtime protos on PyPI load only with protobuf's pure-Python runtime
(see controller.p4runtime_proto); selecting it here, when the package is first
imported, covers every module below.
"""

import os
import sys

if "google.protobuf" not in sys.modules:
    os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
