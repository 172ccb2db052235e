"""bmv2 package."""
