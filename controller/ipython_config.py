"""IPython configuration for this environment: `make setup` installs it as
.venv/etc/ipython/ipython_config.py, which every IPython in the venv reads,
p4runtime-shell (`replayctl shell`) among them.

p4runtime-shell 0.0.6 pins jedi 0.17.2, whose parser (parso 0.7) cannot read
Python 3.11, so Tab completion through jedi fails with a traceback. IPython's
own completer still completes names, attributes and the shell's keys
(`table_entry["<Tab>`, `te.match["<Tab>`).
"""

c = get_config()  # type: ignore[name-defined]  # noqa: F821 - IPython provides it
c.Completer.use_jedi = False
