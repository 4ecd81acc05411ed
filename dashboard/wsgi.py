"""The dashboard for a production WSGI server (gunicorn), configured from the environment:

    FUSED_MLP_RESULTS=/srv/results FUSED_MLP_CACHE_DIR=/var/cache/fused-mlp \\
        gunicorn --workers 4 --bind 0.0.0.0:8050 dashboard.wsgi:server

    FUSED_MLP_RESULTS    the asv results folder (default: the checkout's results/); read only
    FUSED_MLP_CACHE_DIR  the parsed-results cache the workers share (default: the user's cache
                         folder, asv_results.cache.default_cache_dir); "none" keeps no cache
    FUSED_MLP_ASV_CONF   the project's asv.conf.json (default: the one beside the results)

Or build one with arguments: ``gunicorn 'dashboard.wsgi:create_server("/srv/results")'``.
Each worker loads the results itself, through the shared cache (asv_results.cache: one process at
a time loads through it, so the first worker parses and the others read what it wrote), and
reloads when the folder changes. A setting that cannot work stops the server at start with a
message naming it (ValueError), never a traceback from the first request.
"""

from __future__ import annotations

import os
from pathlib import Path

from asv_results.cache import cache_inside_results, default_cache_dir
from dashboard.store.model import DEFAULT_RESULTS_DIR

RESULTS_ENV, CACHE_ENV, CONF_ENV = "FUSED_MLP_RESULTS", "FUSED_MLP_CACHE_DIR", "FUSED_MLP_ASV_CONF"
NO_CACHE = "none"


def settings_from_env(environ=None) -> dict:
    """results_dir, cache_dir and asv_conf from the environment (see the module's text);
    ValueError naming the variable when one cannot work."""
    environ = os.environ if environ is None else environ
    cache = environ.get(CACHE_ENV) or ""
    conf = environ.get(CONF_ENV)
    return check_settings({
        "results_dir": Path(environ.get(RESULTS_ENV) or DEFAULT_RESULTS_DIR),
        "cache_dir": None if cache.lower() == NO_CACHE else (Path(cache) if cache else default_cache_dir()),
        "asv_conf": Path(conf) if conf else None,
    })


def check_settings(settings: dict) -> dict:
    """``settings`` unchanged, or ValueError naming the one that cannot work."""
    results, cache_dir, conf = settings["results_dir"], settings["cache_dir"], settings["asv_conf"]
    if results.exists() and not results.is_dir():
        raise ValueError(f"the results folder {results} ({RESULTS_ENV}) is not a directory")
    if cache_dir is not None and cache_inside_results(results, cache_dir):
        raise ValueError(f"the cache folder {cache_dir} ({CACHE_ENV}) is inside the results folder {results}: its "
                         "files would be read as results; put it elsewhere")
    if conf is not None and not conf.is_file():
        raise ValueError(f"the asv config {conf} ({CONF_ENV}) is not a file")
    return settings


def create_server(results_dir: str | Path | None = None, cache_dir: str | Path | None = None,
                  asv_conf: str | Path | None = None):
    """The Flask server of a dashboard over ``results_dir``; what is not given comes from the
    environment (settings_from_env)."""
    from dashboard.app import create_app

    settings = settings_from_env()
    given = {"results_dir": results_dir, "cache_dir": cache_dir, "asv_conf": asv_conf}
    settings = check_settings({**settings, **{k: Path(v) for k, v in given.items() if v is not None}})
    return create_app(settings["results_dir"], asv_conf=settings["asv_conf"], cache_dir=settings["cache_dir"]).server


def __getattr__(name: str):
    """``dashboard.wsgi:server``, built on first use from the environment."""
    if name in ("server", "application"):
        server = create_server()
        globals().update(server=server, application=server)
        return server
    raise AttributeError(name)
