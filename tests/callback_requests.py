"""Call a Dash app's callbacks over HTTP as the browser does (POST /_dash-update-component), for
tests that send what a browser would not: junk values, names that are not UTF-8, fuzz."""

from __future__ import annotations

import json

UPDATE_ROUTE = "/_dash-update-component"
# The Trends figure's callback also turns the poll for the detector's marks on and off
TRENDS_FIGURE = "..trends-figure.figure...trends-poll.disabled.."


def _split(prop_id: str) -> dict:
    ident, prop = prop_id.rsplit(".", 1)
    return {"id": json.loads(ident) if ident.startswith("{") else ident, "property": prop}


def outputs_of(output_key: str) -> list[dict] | dict:
    """Dash's "outputs" field for a callback_map key ("a.b" or "..a.b...c.d..")."""
    if output_key.startswith(".."):
        return [_split(p) for p in output_key.strip(".").split("...")]
    return _split(output_key)


def body(app, output_key: str, values: dict) -> dict:
    """The request body of one call. ``values``: {"<id>.<property>": value} for each declared
    dependency (missing ones are None); a pattern-matching dependency takes a list of
    (id dict, value) pairs."""
    cb = app.callback_map[output_key]

    def item(dep):
        key = f"{dep['id']}.{dep['property']}"
        if dep["id"].startswith("{") and "ALL" in dep["id"]:
            return [{"id": i, "property": dep["property"], "value": v} for i, v in values.get(key, [])]
        return {**_split(key), "value": values.get(key)}

    return {"output": output_key, "outputs": outputs_of(output_key),
            "inputs": [item(d) for d in cb["inputs"]], "state": [item(d) for d in cb.get("state", [])],
            "changedPropIds": [f"{d['id']}.{d['property']}" for d in cb["inputs"]]}


def call(client, app, output_key: str, values: dict):
    """POST one callback; the werkzeug test response."""
    return client.post(UPDATE_ROUTE, json=body(app, output_key, values))


def qkey(page: str, key: str) -> str:
    """The callback_map spelling of a URL-state control's id (urlstate.qid), as Dash sorts it."""
    return json.dumps({"key": key, "page": page, "type": "q"}, separators=(",", ":"))


def output_key(app, first_output: str) -> str:
    """The callback_map key of the callback whose first output is ``first_output`` ("id.prop")."""
    for key in app.callback_map:
        if key == first_output or key.startswith(f"..{first_output}..."):
            return key
    raise KeyError(first_output)
