"""The results layer: any asv results folder read safely, with no torch and no Dash.

    safe_read        the one JSON reader (regular files inside the folder, size and nesting capped)
    results_folder   the folder's listing: one walk for the gate, the cache and the reload check
    result_file      one asv result file parsed (asv's conventions: NaN skipped, null failed)
    data             the rows of a folder as a pandas frame (the gate's and the tools' loader)
    cache            the server's parsed-results cache (one parse per changed file)
    table            the cache's rows as the dashboard's table
    commit_order     commits in the repository's order (else by date)
    asvconf          asv.conf.json (conf_reader parses it once per change)
    companion_files  the suite's files beside the results (runner state, ...)
    folder_lock      the lock the cache and the findings store share (file_lock opens lock files)

The regressions layer (regressions/) and the dashboard read results only through here.
"""
