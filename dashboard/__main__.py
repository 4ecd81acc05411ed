"""python -m dashboard [--results DIR | --demo] [--asv-conf FILE] [--cache-dir DIR | --no-cache]
[--host 127.0.0.1] [--port 8050]: serve the dashboard."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from asv_results.cache import cache_inside_results, default_cache_dir
from dashboard.store.model import DEFAULT_RESULTS_DIR


def _stop_like_ctrl_c(signum, frame):
    """SIGTERM (systemd, docker stop, kill) ends the server the way Ctrl-C does: the server loop
    returns and the detector's worker is stopped, instead of the process dying on the spot and
    leaving that worker (and its resource tracker) behind."""
    raise KeyboardInterrupt


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dashboard", description=__doc__.split(":")[1].strip())
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS_DIR,
                        help=f"asv results directory (default: {DEFAULT_RESULTS_DIR})")
    parser.add_argument("--asv-conf", type=Path, default=None,
                        help="the project's asv.conf.json: commit links (show_commit_url) and commit order "
                             "(its repo); default: asv.conf.json beside the results directory, if any")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help=f"where parsed result files are kept between starts (default: {default_cache_dir()}); "
                             "never inside the results directory unless you put it there")
    parser.add_argument("--no-cache", action="store_true", help="parse every result file at every start")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8050, help="port, 1 to 65535 (default: 8050)")
    parser.add_argument("--debug", action="store_true", help="Dash debug mode (reloader, dev tools)")
    parser.add_argument("--demo", action="store_true",
                        help="serve a generated, synthetic suite history (written to a temporary folder, removed "
                             "at exit; never into results/): every page, without a GPU")
    args = parser.parse_args(argv)
    if args.demo:
        if any(a == "--results" or a.startswith("--results=") for a in (argv if argv is not None else sys.argv[1:])):
            parser.error("--demo serves generated results: leave out --results")
        import shutil
        import tempfile

        from dashboard.synthetic.demo import NOTE, write_demo_history

        folder = Path(tempfile.mkdtemp(prefix="fused-mlp-demo-"))
        try:
            args.results, args.no_cache, args.cache_dir = write_demo_history(folder / "results"), True, None
            print(f"note: {NOTE}, written to {args.results}", file=sys.stderr)
            return _serve(parser, args, NOTE)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return _serve(parser, args)


def _serve(parser, args, note: str | None = None) -> int:
    if args.results.exists() and not args.results.is_dir():
        parser.error(f"--results {args.results} is not a directory")
    if args.asv_conf is not None and not args.asv_conf.is_file():
        parser.error(f"--asv-conf {args.asv_conf} is not a file")
    if args.no_cache and args.cache_dir is not None:
        parser.error("--cache-dir and --no-cache contradict each other")
    if not 1 <= args.port <= 65535:
        parser.error(f"--port {args.port} is not a TCP port (1 to 65535)")
    if args.cache_dir is not None and cache_inside_results(args.results, args.cache_dir):
        parser.error(f"--cache-dir {args.cache_dir} is inside the results directory {args.results}: the cache's "
                     "files would be read as results; put it elsewhere")
    # Before anything starts a process: a SIGTERM during the first load (its parse workers
    # running) must end it the way Ctrl-C does, through the clean-up below.
    signal.signal(signal.SIGTERM, _stop_like_ctrl_c)
    # ... and SIGINT too, even when this process started with it ignored: Python then installs
    # no Ctrl-C handler, and a server started in the background of a script (or by a parent that
    # ignores SIGINT) would not stop on it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from dashboard.app import create_app

    cache_dir = None if args.no_cache else (args.cache_dir or default_cache_dir())
    app = create_app(args.results, asv_conf=args.asv_conf, cache_dir=cache_dir, note=note)
    store = app.server.config["FUSED_MLP_STORE"]
    try:
        if not args.results.exists():
            print(f"note: {args.results} does not exist yet; the dashboard shows how to produce results",
                  file=sys.stderr)
        else:  # load before serving, so the first page does not wait for it
            _report_load(store.get(), args.results, cache_dir)
        print(f"serving {args.results.resolve()} at http://{args.host}:{args.port}/", file=sys.stderr)
        app.run(host=args.host, port=args.port, debug=args.debug)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM outside the server loop (during the load, say)
        pass
    finally:
        store.close()
    return 0


def loaded_line(data) -> str:
    """What was loaded, timings and static compile metrics alike (once "0 series of 0 benchmarks"
    for a folder of static metrics only, while the Kernels page showed hundreds)."""
    parts = [f"{data.what_was_loaded()} of timings"] if data.runs else []
    if data.static_runs:
        parts.append(f"{data.what_was_loaded(static=True)} of static compile metrics")
    return "; ".join(parts) or data.what_was_loaded()


def _report_load(data, results: Path, cache_dir) -> None:
    if data.problem:
        print(f"note: {data.problem}; the dashboard says how to produce results", file=sys.stderr)
    else:
        print(f"loaded {results}: {loaded_line(data)} in {data.load_seconds:.1f} s "
              f"({data.files_parsed} result file(s) parsed now"
              + (", the rest from the cache)" if cache_dir else ")")
              + (f"; {data.cache_note}" if data.cache_note else ""), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
