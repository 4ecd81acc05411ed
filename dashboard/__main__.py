"""python -m dashboard [--results DIR] [--host 127.0.0.1] [--port 8050]: serve the dashboard."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from dashboard.model import DEFAULT_RESULTS_DIR


def _stop_like_ctrl_c(signum, frame):
    """SIGTERM (systemd, docker stop, kill) ends the server the way Ctrl-C does: the server loop
    returns and the detector's worker is stopped, instead of the process dying on the spot and
    leaving that worker (and its resource tracker) behind."""
    raise KeyboardInterrupt


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dashboard", description=__doc__.split(":")[1].strip())
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS_DIR,
                        help=f"asv results directory (default: {DEFAULT_RESULTS_DIR})")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8050, help="port (default: 8050)")
    parser.add_argument("--debug", action="store_true", help="Dash debug mode (reloader, dev tools)")
    args = parser.parse_args(argv)
    if args.results.exists() and not args.results.is_dir():
        parser.error(f"--results {args.results} is not a directory")
    from dashboard.app import create_app

    app = create_app(args.results)
    store = app.server.config["FUSED_MLP_STORE"]
    if not args.results.exists():
        print(f"note: {args.results} does not exist yet; the dashboard shows how to produce results", file=sys.stderr)
    print(f"serving {args.results.resolve()} at http://{args.host}:{args.port}/", file=sys.stderr)
    signal.signal(signal.SIGTERM, _stop_like_ctrl_c)
    try:
        app.run(host=args.host, port=args.port, debug=args.debug)
    except KeyboardInterrupt:  # a signal that arrived outside the server loop
        pass
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
