"""The storage modes a replay table's payloads can be in, by the names configs, command
lines and hyperparameters use (docs/protocol.md, "Storage modes"; agent/rl/storage.py
implements them). The switch stores every mode alike: 16 opaque words.

    slot       the transition in the slot's words, float32
    float16    the same, observations as float16 (lossy)
    reference  the slot holds a reference; the Actor keeps the bytes
    auto       slot where a transition fits, else reference
"""

STORAGE_MODES = ("auto", "slot", "float16", "reference")
