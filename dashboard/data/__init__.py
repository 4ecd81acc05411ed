"""The values every page derives from a loaded results folder: metrics, case fields, ceilings, facets, comparisons, runs, URL state (no Dash components)."""
