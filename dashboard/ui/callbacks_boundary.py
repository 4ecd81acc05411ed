"""The boundary between the browser and the callbacks: every request to Dash's callback route is
checked before Dash dispatches it, and a callback that fails anyway is logged in one line.

A browser only sends what the layout declared: the callback's own inputs and states, by id and
property, with values of the kinds those properties hold. Anything else (a hand-written or fuzzed
request) is answered 400 with one log line saying what was wrong, instead of a 500 and a
traceback per request (a fuzzer once grew the log to 132 MB). A failure inside a callback is
logged as one line too; its traceback is logged the first time that failure site is seen, so a
real bug stays diagnosable while a flood of the same one does not fill the disk.

    install(app)   # after every callback is registered (dashboard.app.create_app)
"""

from __future__ import annotations

import json
import logging
import math
import threading
import traceback

from dash import Dash
from dash._utils import to_json
from dash.exceptions import PreventUpdate
from flask import request
from werkzeug.exceptions import HTTPException

log = logging.getLogger(__name__)

UPDATE_ROUTE = "_dash-update-component"
MAX_TEXT = 100_000  # characters of one value (a long query string is a few KB)
MAX_ITEMS = 10_000  # items of one list value, and entries of one pattern-matching dependency
MAX_DEPTH = 12  # nesting of a figure event (clickData ...) or a Store's data
MAX_LOGGED_TEXT = 160  # characters of a request's value quoted in a log line
MAX_REQUEST_BYTES = 16 << 20  # a callback request is KBs; a bigger body is answered 413 unread

TEXT_PROPS = frozenset({"pathname", "search", "hash", "href"})
COUNT_PROPS = frozenset({"n_clicks", "n_intervals", "n_submit", "n_blur"})
EVENT_PROPS = frozenset({"clickData", "hoverData", "selectedData", "relayoutData", "restyleData"})


class Refused(ValueError):
    """A request that no layout of this app could have sent; the message says why."""


def _short(value) -> str:
    text = json.dumps(value, default=repr)
    return text if len(text) <= MAX_LOGGED_TEXT else text[:MAX_LOGGED_TEXT] + "…"


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def _depth(value, limit: int) -> int:
    """How deep lists and objects nest, counting no deeper than ``limit + 1``."""
    if limit < 0 or not isinstance(value, (list, dict)):
        return 0
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(c, limit - 1) for c in children), default=0)


def _scalar_problem(value) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        return None if len(value) <= MAX_TEXT else f"text of {len(value):,} characters (at most {MAX_TEXT:,})"
    if isinstance(value, (int, float)):
        return None if math.isfinite(value) else f"{value} is not a finite number"
    return f"{_kind(value)}, expected text, a number, a boolean or null"


def value_problem(prop: str, value, item_id) -> str | None:
    """Why ``value`` cannot be the property ``prop`` of a component, or None."""
    if prop in TEXT_PROPS:
        if value is not None and not isinstance(value, str):
            return f"{_kind(value)}, expected text"
        return _scalar_problem(value)
    if prop in COUNT_PROPS:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            return f"{_short(value)}, expected a count (0, 1, 2, ...)"
        return None
    if prop == "id":  # a component's id property is its id
        return None if value == item_id else f"{_short(value)}, expected the component's id {_short(item_id)}"
    if prop == "value":  # one selection, or a list of them (multi-select, checklist)
        if isinstance(value, list):
            if len(value) > MAX_ITEMS:
                return f"a list of {len(value):,} items (at most {MAX_ITEMS:,})"
            return next((f"an item that is {p}" for p in map(_scalar_problem, value) if p), None)
        return _scalar_problem(value)
    if prop in EVENT_PROPS:
        if value is None:
            return None
        if not isinstance(value, dict):
            return f"{_kind(value)}, expected a plotly event (an object)"
        points = value.get("points", [])
        if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
            return "an event whose 'points' is not a list of objects"
    if _depth(value, MAX_DEPTH) > MAX_DEPTH:
        return f"nested more than {MAX_DEPTH} levels deep"
    return None


# What a control's "value" holds, by component type: one selection or a list of them.
_ONE_VALUE = frozenset({"RadioItems", "Slider", "DatePickerSingle", "Tabs", "Textarea"})
_LIST_VALUE = frozenset({"Checklist", "RangeSlider"})
MAX_KNOWN_CONTROLS = 5_000  # ids remembered (a layout has tens; the cap bounds a hostile one)


def _option_values(options):
    if isinstance(options, dict):
        return list(options)
    if isinstance(options, list):
        return [o.get("value") if isinstance(o, dict) else o for o in options]
    return []


def _value_type(values) -> str | None:
    """"text" or "number" when every option is one, else None (unknown: not checked)."""
    values = [v for v in values if v is not None]
    if values and all(isinstance(v, str) for v in values):
        return "text"
    if values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "number"
    return None


class ControlKinds:
    """What each control on the pages takes as its value, learned from the layouts the server
    sends (the shell, every page, every options update): one value or a list, text or numbers.
    Ids are the same for every visitor, so what one page view teaches holds for all."""

    def __init__(self):
        self._kinds: dict[str, tuple[bool | None, str | None]] = {}  # id -> (a list?, value type)
        self._lock = threading.Lock()

    def _set(self, ident: str, many: bool | None = None, value_type: str | None = None, keep_many=False) -> None:
        with self._lock:
            if ident not in self._kinds and len(self._kinds) >= MAX_KNOWN_CONTROLS:
                return
            old_many, _ = self._kinds.get(ident, (None, None))
            self._kinds[ident] = (old_many if keep_many else many, value_type)

    def learn(self, tree, depth: int = 0) -> None:
        """Record every control of a component tree (Dash's JSON form)."""
        if depth > 200:
            return
        if isinstance(tree, list):
            for child in tree:
                self.learn(child, depth + 1)
            return
        if not isinstance(tree, dict):
            return
        props = tree.get("props")
        if isinstance(props, dict) and "type" in tree and "namespace" in tree:
            kind = tree["type"]
            if "id" in props and kind in ("Dropdown", "Input", *_ONE_VALUE, *_LIST_VALUE):
                many = bool(props.get("multi")) if kind == "Dropdown" else kind in _LIST_VALUE
                value_type = ("number" if props.get("type") == "number" else "text") if kind == "Input" \
                    else _value_type(_option_values(props.get("options")))
                self._set(_id_text(props["id"]), many, value_type)
            self.learn(props.get("children"), depth + 1)  # not figures or table data: no controls there

    def learn_options(self, ident: str, options) -> None:
        """A callback set a control's options: what its values may be follows them."""
        with self._lock:
            known = ident in self._kinds
        if known:
            self._set(ident, value_type=_value_type(_option_values(options)), keep_many=True)

    def problem(self, ident: str, value) -> str | None:
        """Why ``value`` cannot be the value of the control ``ident``, or None (also when the
        control has not been seen yet: then only the generic rule applies)."""
        with self._lock:
            many, value_type = self._kinds.get(ident, (None, None))
        if many is False and isinstance(value, list):
            return "a list, expected one value (this control is not a multi-select)"
        if many is True and value is not None and not isinstance(value, list):
            return f"{_kind(value)}, expected a list (this control selects several)"
        items = value if isinstance(value, list) else [value]
        if value_type == "text" and any(v is not None and not isinstance(v, str) for v in items):
            return "not text, expected one of the control's (text) options"
        if value_type == "number" and any(v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)))
                                          for v in items):
            return "not a number, expected a number"
        return None


def _id_text(ident) -> str:
    """Dash's spelling of an id (a dict id as compact JSON with sorted keys)."""
    return json.dumps(ident, sort_keys=True, separators=(",", ":")) if isinstance(ident, dict) else str(ident)


def _wildcard(part) -> bool:
    return isinstance(part, list) and len(part) == 1 and part[0] in ("ALL", "MATCH", "ALLSMALLER")


def _check_id(got, declared: str, where: str) -> None:
    """A plain id must be the declared one; a pattern-matching one must fit its pattern."""
    if not declared.startswith("{"):
        if got != declared:
            raise Refused(f"{where} has id {_short(got)}, expected {declared!r}")
        return
    pattern = json.loads(declared)
    if not isinstance(got, dict) or set(got) != set(pattern):
        raise Refused(f"{where} has id {_short(got)}, expected one of the form {declared}")
    for key, part in pattern.items():
        ok = isinstance(got[key], (str, int)) and not isinstance(got[key], bool) if _wildcard(part) \
            else got[key] == part
        if not ok:
            raise Refused(f"{where} has id {_short(got)}, expected one of the form {declared}")


def _check_item(item, dep: dict, where: str, kinds: ControlKinds | None) -> None:
    if not isinstance(item, dict):
        raise Refused(f"{where} is {_kind(item)}, expected an object with id, property and value")
    if item.get("property") != dep["property"]:
        raise Refused(f"{where} names property {_short(item.get('property'))}, expected {dep['property']!r}")
    _check_id(item.get("id"), dep["id"], where)
    problem = value_problem(dep["property"], item.get("value"), item.get("id"))
    if problem is None and kinds is not None and dep["property"] == "value":
        problem = kinds.problem(_id_text(item["id"]), item.get("value"))
    if problem:
        raise Refused(f"{where} ({dep['id']}.{dep['property']}) is {problem}")


def _check_dependency(got, dep: dict, where: str, kinds: ControlKinds | None) -> None:
    pattern = dep["id"].startswith("{") and any(_wildcard(p) for p in json.loads(dep["id"]).values())
    if pattern and "MATCH" not in dep["id"]:  # ALL / ALLSMALLER: a list of the matching components
        if not isinstance(got, list) or len(got) > MAX_ITEMS:
            raise Refused(f"{where} ({dep['id']}) is {_kind(got)}, expected a list of at most {MAX_ITEMS:,} items")
        for i, item in enumerate(got):
            _check_item(item, dep, f"{where}[{i}]", kinds)
    else:
        _check_item(got, dep, where, kinds)


def _declared_outputs(output_key: str) -> list[str]:
    if output_key.startswith(".."):
        return output_key[2:-2].split("...")
    return [output_key]


def _check_outputs(got, output_key: str) -> None:
    declared = _declared_outputs(output_key)
    items = got if output_key.startswith("..") else [got]
    if not isinstance(items, list) or len(items) != len(declared):
        raise Refused(f"'outputs' is not the {len(declared)} output(s) of {output_key}")
    for item, name in zip(items, declared):
        ident, prop = name.rsplit(".", 1)
        if isinstance(item, list) and ident.startswith("{"):  # an ALL output: a list of components
            continue
        if not isinstance(item, dict) or item.get("property") != prop:
            raise Refused(f"'outputs' does not name {name}")
        _check_id(item.get("id"), ident, f"output {name}")


def check_request(app: Dash, body, kinds: ControlKinds | None = None) -> None:
    """Refused unless ``body`` is a callback request this app's layout could send (with
    ``kinds``: also unless each control's value is of the kind that control takes)."""
    if not isinstance(body, dict):
        raise Refused(f"the body is {_kind(body)}, expected a JSON object")
    output_key = body.get("output")
    if not isinstance(output_key, str) or output_key not in app.callback_map:
        raise Refused(f"no callback has the output {_short(output_key)}")
    callback = app.callback_map[output_key]
    _check_outputs(body.get("outputs"), output_key)
    for field, declared in (("inputs", callback.get("inputs", [])), ("state", callback.get("state", []))):
        got = body.get(field, [])
        if not isinstance(got, list) or len(got) != len(declared):
            raise Refused(f"'{field}' holds {len(got) if isinstance(got, list) else _kind(got)} "
                          f"item(s), the callback declares {len(declared)}")
        for i, (item, dep) in enumerate(zip(got, declared)):
            _check_dependency(item, dep, f"{field}[{i}]", kinds)
    changed = body.get("changedPropIds", [])
    if not isinstance(changed, list) or not all(isinstance(c, str) and len(c) <= MAX_TEXT for c in changed):
        raise Refused("'changedPropIds' is not a list of text")


class FailureLog:
    """One line per failure; the traceback only the first time a failure site (exception type,
    file, line) is seen."""

    def __init__(self, logger: logging.Logger = log):
        self.logger = logger
        self._seen: set[tuple] = set()
        self._lock = threading.Lock()

    def failed(self, what: str, exc: BaseException) -> None:
        frames = traceback.extract_tb(exc.__traceback__)
        site = frames[-1] if frames else None
        where = f" at {site.filename}:{site.lineno} in {site.name}" if site else ""
        key = (type(exc).__name__, site.filename if site else "", site.lineno if site else 0)
        with self._lock:
            first = key not in self._seen
            self._seen.add(key)
        message = str(exc).splitlines()[0][:MAX_LOGGED_TEXT] if str(exc) else ""
        line = f"{what} failed: {type(exc).__name__}: {message}{where}"
        if first:
            self.logger.error("%s (first time here; traceback follows, later ones are one line)\n%s", line,
                              "".join(traceback.format_exception(exc)).rstrip())
        else:
            self.logger.error("%s", line)


FAILURES = FailureLog()


def log_failure(what: str, exc: BaseException) -> None:
    """Log a callback's failure the boundary's way (one line; the first traceback per site)."""
    FAILURES.failed(what, exc)


def _learn_from_answer(kinds: ControlKinds, answer) -> None:
    """Learn the controls in a callback's answer ({"response": {id: {property: value}}})."""
    outputs = answer.get("response") if isinstance(answer, dict) else None
    if not isinstance(outputs, dict):
        return
    for ident, props in outputs.items():
        if not isinstance(props, dict):
            continue
        for prop, value in props.items():
            if prop == "options":
                kinds.learn_options(ident, value)
            elif isinstance(value, (list, dict)):
                kinds.learn(value)


def install(app: Dash) -> None:
    """Check every callback request before Dash dispatches it, and log callback failures in one
    line (call after every callback is registered; the checks read ``app.callback_map``)."""
    server = app.server
    if server.config.get("MAX_CONTENT_LENGTH") is None:
        server.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES
    kinds = ControlKinds()
    kinds.learn(json.loads(to_json(app.layout)))  # the shell's controls (the theme)
    # Callbacks whose answers hold layout (page bodies, parameter controls) or options.
    teaching = {key for key in app.callback_map
                if any(name.endswith((".children", ".options")) for name in _declared_outputs(key))}

    def is_update() -> bool:
        return request.method == "POST" and request.path.endswith("/" + UPDATE_ROUTE)

    @server.before_request
    def _check():
        if not is_update():
            return None
        try:
            try:
                body = request.get_json(silent=True)
            except RecursionError:  # the JSON parser recursed past Python's limit
                raise Refused("the body nests too deeply to be a callback request") from None
            check_request(app, body, kinds)
        except Refused as exc:
            log.warning("refused a callback request from %s: %s", request.remote_addr, exc)
            return f"refused: {exc}\n", 400, {"Content-Type": "text/plain; charset=utf-8"}
        return None

    @server.after_request
    def _learn(response):
        if response.status_code == 200 and is_update() and response.is_json:
            body = request.get_json(silent=True)
            if isinstance(body, dict) and body.get("output") in teaching:
                _learn_from_answer(kinds, response.get_json(silent=True))
        return response

    @server.errorhandler(Exception)
    def _failed(exc):
        if isinstance(exc, (HTTPException, PreventUpdate)):
            return exc if isinstance(exc, HTTPException) else ("", 204)
        body = request.get_json(silent=True) if is_update() else None
        what = f"{request.method} {request.path}"
        if isinstance(body, dict) and isinstance(body.get("output"), str):
            outputs = _declared_outputs(body["output"])
            what = f"callback {outputs[0]}" + (f" (+{len(outputs) - 1} outputs)" if len(outputs) > 1 else "")
        FAILURES.failed(what, exc)
        return "the server could not answer this request; its log says why\n", 500, \
            {"Content-Type": "text/plain; charset=utf-8"}
