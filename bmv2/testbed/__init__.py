"""Testbeds: the switch with the config's hosts around it.

netns        network namespaces and veth pairs for the project's own test hosts
netns_bed    the namespace testbed (Testbed) and what a launcher needs of any testbed (Bed)
mininet_bed  the same roles as a Mininet network
standalone   a testbed kept up for operating by hand (python -m bmv2.testbed.standalone)
"""
