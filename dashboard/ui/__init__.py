"""Dash components and callback plumbing shared by the pages: controls, facet and run selectors, notices, the callback boundary."""
