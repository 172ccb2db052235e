"""The contract: the bottom layer, imported by the agent and the controller alike,
importing nothing of the project.

protocol   the replay wire codec and the contract's vocabulary (the one every part uses)
cli_args   command-line conventions shared by every tool (exit codes, argument types)
"""
