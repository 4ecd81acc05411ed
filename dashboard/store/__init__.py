"""The store: one load of a results folder (the table, the runs, the detector's findings) that every page reads."""
