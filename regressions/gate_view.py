"""The gate's verdict as the pages read it: the record the detector's worker keeps
(regressions.judgement.verdict_record, the gate's own JSON report), looked up per finding and per
machine. Nothing here judges: every class, evidence, note and acceptance is the gate's, word for
word; a page that needs one asks here."""

from __future__ import annotations

from dataclasses import dataclass, field

STATUS = "status"  # a StatusChange's kind
FAILING_CLASS = "failing"  # how every page names a series that started failing (the gate fails it)


def change_key(change) -> tuple:
    """(machine, env, benchmark, params, commit, level or status) of a Finding / StatusChange or
    of the gate's JSON of one."""
    get = change.get if isinstance(change, dict) else lambda k: getattr(change, k)
    return (get("machine"), get("env_name"), get("benchmark"), get("params"), get("commit_hash"),
            STATUS if get("kind") == STATUS else "level")


# In one machine's record (gate_records.machine_record): why the gate over every machine cannot judge
WHOLE_FOLDER_ERROR = "whole_folder_error"


@dataclass
class GateView:
    record: dict | None  # None: the detector has not finished
    _by_key: dict = field(default_factory=dict, init=False, repr=False)

    _failing_keys: set = field(default_factory=set, init=False, repr=False)
    _accepted_elsewhere: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        for item in self.items():
            self._by_key[change_key(item["change"])] = item
        self._failing_keys = {change_key(i["change"]) for i in self.gate.get("failing", [])}
        self._accepted_elsewhere = {change_key(a["change"]): a["accepted"]
                                    for a in self.gate.get("accepted_elsewhere", [])}

    @property
    def ready(self) -> bool:
        return self.record is not None

    @property
    def error(self) -> str | None:
        """Why the gate cannot judge (its exit-2 message), or None."""
        return (self.record or {}).get("error")

    @property
    def whole_folder_error(self) -> str | None:
        """Set in one machine's ``--machine`` record: why the gate over every machine cannot judge."""
        return (self.record or {}).get(WHOLE_FOLDER_ERROR)

    @property
    def gate(self) -> dict:
        return ((self.record or {}).get("document") or {}).get("gate") or {}

    def items(self, machine: str | None = None) -> list[dict]:
        return [i for i in self.gate.get("items", []) if not machine or i["change"]["machine"] == machine]

    def failing(self, machine: str | None = None) -> list[dict]:
        return [i for i in self.gate.get("failing", []) if not machine or i["change"]["machine"] == machine]

    def judged(self, machine: str | None = None) -> list[dict]:
        return [r for r in self.gate.get("judged", []) if not machine or r["machine"] == machine]

    def failed(self, machine: str | None = None) -> bool:
        if not machine:
            return bool(self.gate.get("failed"))
        return bool(((self.record or {}).get("machines") or {}).get(machine, {}).get("failed"))

    def word(self, machine: str | None = None) -> str:
        """The gate's last line: "pass", "FAIL: 2 regression(s)", ... (of that machine's items)."""
        if not machine:
            return str(self.gate.get("verdict", ""))
        return str(((self.record or {}).get("machines") or {}).get(machine, {}).get("verdict", "pass"))

    def item_for(self, change) -> dict | None:
        """The gate's item of this finding (its category, note, class, acceptance), or None: the gate
        does not judge it (not present at the newest commit, an improvement, a run with no commit
        judged)."""
        return self._by_key.get(change_key(change))

    def acceptance_label(self, change) -> str | None:
        """The gate's words for the accepted.json entry accepting this finding, or None: from its
        item, or from the regressions the gate lists as accepted without judging them (gone by
        the newest commit)."""
        entry = (self.item_for(change) or {}).get("accepted") or self._accepted_elsewhere.get(change_key(change))
        return acceptance_label({"accepted": entry}) if entry else None

    def is_failing(self, item: dict | None) -> bool:
        return item is not None and change_key(item["change"]) in self._failing_keys


def class_of(item: dict | None) -> tuple[str, str] | None:
    """(class, evidence) the gate gives an item: library / environment / noise with the
    classification's evidence word for word; "failing" for a series that started failing (the
    gate fails it whatever the implementation); None when the gate gives no class."""
    if item is None:
        return None
    if item["change"].get("kind") == STATUS:
        if item["change"].get("direction") != "regression":
            return None
        impl = _impl(item["change"].get("params", ""))
        what = f"{impl} " if impl else ""
        return FAILING_CLASS, f"{what}started failing ({item['note']})"
    c = item.get("classification")
    return (c["class"], c["evidence"]) if c else None


def acceptance_label(item: dict | None) -> str | None:
    """The gate's words for the accepted.json entry that accepts this item, or None."""
    from regressions.acceptance import Acceptance

    entry = (item or {}).get("accepted")
    return Acceptance(**entry).label() if entry else None


def _impl(params: str) -> str | None:
    from regressions.classify import impl_of

    return impl_of(params)
