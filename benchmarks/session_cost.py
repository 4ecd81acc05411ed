"""What one GPU call (tools/gpu_runner/session.sh) runs, stage by stage, and how long each stage
takes against its limit: every process the session starts, every torch import, every git call
and snapshot, plus the asv classes' own work and the profile pass's from benchmarks.suite_cost.

    python -m benchmarks.session_cost                                # the first call on one H200, quick grid
    python -m benchmarks.session_cost --part 2                       # the later call `--part 2`
    python -m benchmarks.session_cost --grid tiny --constants FILE --stages quick,profile   # a CPU rehearsal's

The stages, their caps, the stages each call runs (first_call_stages, part_stages), the asv
classes of the quick stage and the default grid's parts (rest_parts, one later call each, from
cold caches) are read from session.sh itself, so a new stage, class or part, or a stage moved
from one call to another, changes the model: each call is modelled by the stages it runs. Each
regex of a stage or part (a class, or some of a class's implementations: asv matches
name(params)) is one `benchmarks.run --prepared` process (its imports, `git status` and `git
rev-parse HEAD`, two runner-state snapshot processes) and one asv run (discovery and asv's
forkserver each import torch) around the processes and measuring of the combinations it selects
(suite_cost's model on one H200). The Python check and the machine registration run once, in
setup (benchmarks.run --prepare-only). Every call's modelled work, the first call's too, must
stay within CALL_SHARE of a CALL_S call (tests/test_session_cost.py).

On a CPU rehearsal (--constants: the per-process constants measured on that machine by
tools/measure_session_constants.py) the interpreted kernels' work is no H200 model: it is taken
from what asv itself recorded for each benchmark (`--asv-results DIR`, the rehearsal's result
files) and what the profile pass recorded of itself (`--profiles DIR`), so the comparison with
the rehearsal's stages.tsv tests what this model is for, that it counts every process, import
and git call the session makes.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from asv_results.safe_read import read_json

REPO = Path(__file__).resolve().parents[1]
SESSION = REPO / "tools" / "gpu_runner" / "session.sh"

# (value on one H200 runner, source). tools/measure_session_constants.py measures each on a CPU.
CONSTANTS = {
    "python_s": (0.05, "assumed: one Python process to its first line (interpreter and site)"),
    "import_torch_s": (4.9, "measured on the H200 runner (suite_cost's import_torch_s)"),
    "check_python_s": (6.0, "assumed: `import asv, torch, triton` in a process of its own (torch's 4.9 s + triton, asv)"),
    "register_s": (7.0, "assumed: benchmarks.harness.environment: torch, triton, liger's version, asv's "
                        "machine file and nvidia-smi for the driver"),
    "run_module_s": (0.3, "assumed: benchmarks.run's own imports (grids, runner state, skip reasons)"),
    "snapshot_s": (0.6, "assumed: one `python -m benchmarks.harness.runner_state` (NVML and the versions)"),
    "git_s": (0.02, "assumed: one git call (rev-parse, status) on a warm checkout"),
    "asv_run_s": (10.8, "suite_cost's asv_run_s: discovery and the forkserver each import torch, +1 s of asv"),
    "copy_s": (0.05, "assumed: cp -a of results/ (about 150 KB) into $OUT"),
    "pip_install_s": (15.0, "assumed: asv, pytest, nvidia-ml-py and liger-kernel from .whl/ (device only)"),
    "gpu_check_s": (150.0, "assumed: benchmarks.gpu_check at real sizes (6 cases x 3 dtypes, 10 FP8 cases); measure on the GPU"),
    "native_s": (100.0, "assumed: the native kernel tests (every config compiled natively); measure on the GPU"),
    "first_import_extra_s": (1.6, "measured here (tools/measure_session_constants.py): the first `import torch` "
                                  "with torch's, triton's and numpy's files out of the page cache (posix_fadvise), less "
                                  "a warm one; the CPU build is 1.8 GB, the runner's CUDA build more: setup's measured "
                                  "check_python_s in stages.tsv says what it costs there"),
    "profile_module_s": (1.0, "assumed: benchmarks.profile's own imports beyond torch (the harness, torch.profiler)"),
    "machine_identity_s": (1.0, "assumed: benchmarks.profile's machine_identity (nvidia-smi for the driver)"),
}


@dataclass
class Item:
    what: str
    count: float
    seconds_each: float

    @property
    def seconds(self) -> float:
        return self.count * self.seconds_each


CALL_S = 600  # one call's limit on the device machine
CALL_SHARE = 0.8  # what a call's modelled work may fill of it: the rest is the margin for what the model misses


def session_stages(path: Path = SESSION) -> dict[str, int]:
    """{stage: cap seconds} in session.sh's order (its `stage NAME CAP MIN ...` lines)."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s*stage (\w+) (\d+) \d+ ", path.read_text(), re.M)}


def _regexes(text: str) -> list[str]:
    return text.split()  # session.sh splits them as words too (asv_by_class)


def quick_classes(path: Path = SESSION) -> tuple[list[str], bool]:
    """The asv -b regexes of session.sh's quick stage (one benchmarks.run each, asv_by_class), and
    whether those runs are --prepared (else each checks the Python and registers the machine again)."""
    text = path.read_text()
    loop = re.search(r"asv_by_class\(\) \{.*?\n\s*done", text, re.S)
    return _regexes(re.search(r"^quick_classes='([^']*)'", text, re.M).group(1)), "benchmarks.run --prepared" in loop.group(0)


def call_stages(part: int | None = None, path: Path = SESSION) -> list[str]:
    """The stages a call runs when --stages does not say, in session.sh's order: the first call's
    (its first_call_stages) or, for `part` K, the call `--part K`'s (part_stages[K-1])."""
    text = path.read_text()
    if part is None:
        listed = re.search(r'^first_call_stages="([^"]*)"', text, re.M).group(1)
    else:
        body = re.search(r"^part_stages=\(([^)]*)\)", text, re.M).group(1)
        listed = re.findall(r'"([^"]*)"', body)[part - 1]
    names = listed.split(",")
    unknown = sorted(set(names) - set(session_stages(path)))
    if unknown:
        raise ValueError(f"{path}: the {'first call' if part is None else f'--part {part} call'} "
                         f"lists stages it has no `stage` line for: {unknown}")
    return [stage for stage in session_stages(path) if stage in names]


def part_stage_lists(path: Path = SESSION) -> int:
    """How many calls part_stages gives a stage list (one per part of rest_parts, if it is right)."""
    return len(re.findall(r'"[^"]*"', re.search(r"^part_stages=\(([^)]*)\)", path.read_text(), re.M).group(1)))


def rest_parts(path: Path = SESSION) -> list[list[str]]:
    """session.sh's rest_parts: the default grid's classes in parts, one call each (--part K)."""
    # the array's quoted words (a regex may hold parentheses itself)
    body = re.search(r"^rest_parts=\(((?:\s*'[^']*')*)\s*\)", path.read_text(), re.M).group(1)
    return [_regexes(part) for part in re.findall(r"'([^']*)'", body)]


def _matches(patterns: list[str]):
    """Whether a benchmark (asv's name with its params, suite_cost.benchmark_names) is one that
    asv -b selects for one of `patterns` (asv matches a parameterized benchmark's name(params))."""
    return lambda name: any(re.search(p, name) for p in patterns)


def pattern_costs(patterns: list[str], grid: str = "default", caches=None) -> dict[str, dict]:
    """{pattern: suite_cost's per-class costs of its asv run} for one call's runs, in order: the
    on-disk caches (`caches`, default cold) filled by the earlier runs serve the later, each run
    starts its own measuring processes. A pattern may select some combinations of a class (its
    implementations, say): only those are counted."""
    from benchmarks import suite_cost

    caches = caches if caches is not None else suite_cost._Session(warm=False)
    return {p: {name: c for name, c in suite_cost.model(grid, False, _matches([p]), session=caches).items()
                if name != "asv run"} for p in patterns}


def _class_work(pattern: str, durations: dict[str, float] | None, modelled: dict) -> float:
    """The benchmarks `pattern` selects: asv's recorded durations (a CPU rehearsal, per
    combination: asv_durations), else suite_cost's H200 model of their processes and measuring
    (`modelled`, pattern_costs)."""
    if durations is not None:
        return sum(seconds for name, seconds in durations.items() if re.search(pattern, name))
    return sum(c.seconds for c in modelled[pattern].values())


def _class_runs(patterns: list[str], prepared: bool, c: dict, work) -> list[Item]:
    """One `benchmarks.run --prepared` per class (asv_by_class): its process and what it runs around asv."""
    n = len(patterns)
    return [
        Item("benchmarks.run per class: Python and its imports", n, c["python_s"] + c["run_module_s"]),
        *([] if prepared else [  # what --prepared saves: two torch imports per class
            Item("  its Python check per class (not --prepared)", n, c["python_s"] + c["check_python_s"]),
            Item("  its machine registration per class (not --prepared)", n, c["python_s"] + c["register_s"])]),
        Item("  git status and git rev-parse HEAD per class", 2 * n, c["git_s"]),
        Item("  runner-state snapshots (before and after each asv run)", 2 * n, c["python_s"] + c["snapshot_s"]),
        Item("  asv run per class (discovery, forkserver)", n, c["asv_run_s"]),
        Item("  the results copied into $OUT per class (cp)", n, c["copy_s"]),
        *[Item(f"  {pattern}: its processes and measuring", 1, work(pattern)) for pattern in patterns],
    ]


def model(grid: str, constants: dict[str, float], durations: dict[str, float] | None = None,
          device: bool = True, session: Path = SESSION, part: int | None = None,
          profile_seconds: float | None = None, stages: list[str] | None = None) -> dict[str, list[Item]]:
    """{stage: its items} of one session.sh call (`session`): setup, then the stages the call runs
    (`stages`, default what session.sh runs for it: call_stages), in session.sh's order. The first
    call (`part` None) has `grid` as the quick stage's grid, its rest stage the whole default grid;
    the call `--part K` the default grid's Kth part as its rest stage. The on-disk caches start
    cold (a later call may get a fresh machine) and each stage's runs fill them for the next. On a
    CPU rehearsal (device False) the classes' work is `durations` (asv's records) and the profile
    pass's `profile_seconds` (its own records)."""
    from benchmarks import suite_cost

    c = constants
    _, prepared = quick_classes(session)
    caches = suite_cost._Session(warm=False)
    # the GPU work of check and native is an H200 assumption: no model of the interpreter's on a CPU
    work = (lambda name: c[name]) if device else (lambda name: 0.0)
    not_modelled = "" if device else " (not modelled off the GPU)"

    def class_runs(patterns: list[str], asv_grid: str) -> list[Item]:
        modelled = {} if durations is not None else pattern_costs(patterns, asv_grid, caches)
        return _class_runs(patterns, prepared, c, lambda p: _class_work(p, durations, modelled))

    def profile_items() -> list[Item]:
        if device:
            profiled = suite_cost.profile_pass(grid, caches)
            what = (f"  {profiled.measured} profiled calls, {profiled.torch_compiles} cold torch.compiles, "
                    f"{profiled.max_autotune_gemms} max-autotune shapes (suite_cost.profile_pass)")
            pass_seconds = profiled.seconds
        else:
            what, pass_seconds = "  the pass, as it recorded itself (its seconds)", profile_seconds or 0.0
        return [Item("benchmarks.profile: Python, torch", 1, c["python_s"] + c["import_torch_s"]),
                Item("  its own imports (the harness, torch.profiler)", 1, c["profile_module_s"]),
                Item("  git status (uncommitted changes), rev-parse HEAD, log (the commit's date)", 3, c["git_s"]),
                Item("  machine_identity", 1, c["machine_identity_s"]),
                Item(what, 1, pass_seconds)]

    rest = rest_parts(session)
    builders = {
        "quick": lambda: class_runs(quick_classes(session)[0], grid),
        "check": lambda: [Item("benchmarks.gpu_check: Python, torch", 1, c["python_s"] + c["import_torch_s"]),
                          Item("  its cases" + not_modelled, 1, work("gpu_check_s"))],
        "native": lambda: [Item("pytest: Python, torch, the test modules", 1, c["python_s"] + c["import_torch_s"]),
                           Item("  the native kernel tests" + not_modelled, 1, work("native_s"))],
        "rest": lambda: class_runs(rest[part - 1] if part is not None else [p for ps in rest for p in ps], "default"),
        "profile": profile_items,
    }
    out = {"setup": _setup(c, device)}
    for stage in stages if stages is not None else call_stages(part, session):
        out[stage] = builders[stage]()
    return out


def _setup(c: dict, device: bool) -> list[Item]:
    """session.sh's setup: git restored, the wheels (on the device), benchmarks.run --prepare-only."""
    return [
        Item("git: --version, config, rev-parse (restore_git.sh)", 3, c["git_s"]),
        *([Item("pip install from .whl/", 1, c["pip_install_s"])] if device else []),
        Item("benchmarks.run --prepare-only: Python and its imports", 1, c["python_s"] + c["run_module_s"]),
        Item("  its Python check (import asv, torch, triton)", 1, c["python_s"] + c["check_python_s"]),
        # a fresh machine reads torch from disk once; the rehearsal's venv is in the page cache
        *([Item("  the session's first import of torch: its files read from disk", 1, c["first_import_extra_s"])]
          if device else []),
        Item("  its machine registration (benchmarks.harness.environment)", 1, c["python_s"] + c["register_s"]),
    ]


def profile_durations(folder: Path) -> float:
    """Seconds the profile passes under `folder` (results/profiles/<machine>/<commit>.json) recorded:
    each pass's own, else (a pass from before they were recorded) the sum of its entries'."""
    total = 0.0
    for path in sorted(Path(folder).glob("*/*.json")):
        doc, reason = read_json(path, Path(folder))
        if reason is not None or not isinstance(doc, dict):
            print(f"skipped {path}: {reason or 'not a profile pass'}", file=sys.stderr)
            continue
        if isinstance(doc.get("seconds"), (int, float)):
            total += doc["seconds"]
            continue
        total += sum(e["seconds"] for e in doc.get("profiles") or []
                     if isinstance(e, dict) and isinstance(e.get("seconds"), (int, float)))
    return total


def asv_durations(results: Path, machine: str = "*") -> dict[str, float]:
    """{benchmark: seconds} asv recorded in the result files of `machine` under `results` (each
    benchmark's 'duration' column, the setup_cache entries of 'durations' too). asv records one
    duration for all of a parameterized benchmark's combinations: it is shared out evenly among
    their names, `name(param reprs)`, so a -b regex that selects some of them gets their share."""
    out: dict[str, float] = {}
    for path in sorted(Path(results).glob(f"{machine}/*-*.json")):
        doc, reason = read_json(path, Path(results))
        if reason is not None or not isinstance(doc, dict):
            print(f"skipped {path}: {reason or 'not an asv result file'}", file=sys.stderr)
            continue
        columns = doc.get("result_columns") or []
        for name, row in (doc.get("results") or {}).items():
            fields = dict(zip(columns, row or []))
            value, params = fields.get("duration"), fields.get("params") or []
            params = params if all(isinstance(values, list) for values in params) else []
            if isinstance(value, (int, float)):
                combos = [f"{name}({', '.join(map(str, combo))})" for combo in itertools.product(*params)] if params else []
                combos = combos or [name]
                for combo in combos:
                    out[combo] = out.get(combo, 0.0) + value / len(combos)
        for name, value in (doc.get("durations") or {}).items():
            match = re.match(r"<setup_cache (\w+):", name)
            if match and isinstance(value, (int, float)):
                out[f"{match.group(1)}.<setup_cache>"] = out.get(f"{match.group(1)}.<setup_cache>", 0.0) + value
    return out


def read_stages_tsv(path: Path) -> dict[str, tuple[float, str]]:
    """{stage: (seconds, status)} of a run's stages.tsv (its `measured:` input rows left out)."""
    out = {}
    for line in path.read_text().splitlines()[1:]:
        name, status, seconds, *_ = line.split("\t")
        if not name.startswith("measured:"):
            out[name] = (float(seconds), status)
    return out


def read_measured_inputs(path: Path) -> dict[str, float]:
    """{input: the session's own median} of a stages.tsv's `measured:NAME` rows that have a value
    (benchmarks.measured_inputs writes them; "not met" rows have none)."""
    out = {}
    for line in path.read_text().splitlines()[1:]:
        name, _, median, *_ = [*line.split("\t"), "", "", ""]
        if name.startswith("measured:"):
            try:
                out[name.removeprefix("measured:")] = float(median)
            except ValueError:
                continue
    return out


def fitted(stages: dict[str, list[Item]], caps: dict[str, int], budget: int, reserve: int = 15) -> list[tuple]:
    """(stage, modelled s, limit s, margin s) in order, as session.sh limits each stage: its cap or
    what is left of the budget (less the reserve for packing), whichever is less; a stage that
    runs past its limit is cut there, so the next starts at the limit."""
    rows, used = [], 0.0
    for stage, items in stages.items():
        seconds = sum(i.seconds for i in items)
        cap = caps.get(stage)
        limit = None if cap is None else max(0.0, min(cap, budget - reserve - used))
        rows.append((stage, seconds, limit, None if limit is None else limit - seconds))
        used += seconds if limit is None else min(seconds, limit)
    return rows


def _shown(seconds: float) -> str:
    """Seconds as the table shows them: tenths below 20 s (a 5 s setup judged at 15 %), else whole."""
    return f"{seconds:.1f}" if seconds < 20 else f"{seconds:.0f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.session_cost", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", default="quick", choices=("tiny", "quick"), help="the quick stage's grid")
    parser.add_argument("--part", type=int, help="model the call `--part K` (the default grid's Kth part)")
    parser.add_argument("--stages", help="the stages the call runs, as session.sh --stages (default: what "
                                         "session.sh runs for the first call, or for --part K)")
    parser.add_argument("--constants", type=Path, help="JSON {name: seconds} measured on this machine "
                                                      "(tools/measure_session_constants.py)")
    parser.add_argument("--asv-results", type=Path, help="a rehearsal's results folder: the classes' work as asv "
                                                        "recorded it, instead of the H200 model")
    parser.add_argument("--machine", default="*", help="with --asv-results: the rehearsal's machine (default: all)")
    parser.add_argument("--profiles", type=Path, help="a rehearsal's results/profiles folder: the profile pass's "
                                                     "work as it recorded it")
    parser.add_argument("--stages-tsv", type=Path, help="a run's stages.tsv, to print beside the model")
    parser.add_argument("--budget", type=int, default=540, help="session.sh --budget (default 540)")
    args = parser.parse_args(argv)
    parts = rest_parts()
    if args.part is not None and not 1 <= args.part <= len(parts):
        parser.error(f"--part {args.part}: session.sh has parts 1 to {len(parts)}")
    listed = None
    if args.stages is not None:
        listed = [stage for stage in session_stages() if stage in args.stages.split(",")]
        unknown = sorted(set(args.stages.split(",")) - set(listed))
        if unknown:
            parser.error(f"--stages {args.stages}: no such stages {unknown}; session.sh has {list(session_stages())}")
    constants = {name: value for name, (value, _) in CONSTANTS.items()}
    if args.constants:
        measured, reason = read_json(args.constants, args.constants.resolve().parent)
        if reason is not None:
            parser.error(f"--constants {args.constants}: {reason}")
        if not isinstance(measured, dict):
            parser.error(f"--constants {args.constants}: not a JSON object of constant names to values")
        unknown = sorted(set(measured) - set(constants))
        if unknown:
            parser.error(f"--constants {args.constants}: unknown names {unknown}; expected some of {sorted(constants)}")
        constants.update(measured)
    for flag, folder in (("--asv-results", args.asv_results), ("--profiles", args.profiles)):
        if folder is not None and not folder.is_dir():
            parser.error(f"{flag} {folder}: no such folder")
    if args.stages_tsv is not None and not args.stages_tsv.is_file():
        parser.error(f"--stages-tsv {args.stages_tsv}: no such file")
    durations = asv_durations(args.asv_results, args.machine) if args.asv_results else None
    measured_stages = read_stages_tsv(args.stages_tsv) if args.stages_tsv else {}
    stages = model(args.grid, constants, durations, device=args.constants is None, part=args.part,
                   profile_seconds=profile_durations(args.profiles) if args.profiles else None, stages=listed)
    # session.sh's caps, with the STAGE_CAP_<name> overrides it reads (a rehearsal's STAGE_CAP_quick)
    caps = {"setup": None, **{stage: int(os.environ.get(f"STAGE_CAP_{stage}", cap))
                              for stage, cap in session_stages().items()}}
    call = "the first call" if args.part is None else f"the call --part {args.part}"
    print(f"{call}: setup, {', '.join(list(stages)[1:])}" + (" (--stages)" if listed is not None else " (session.sh's)"))
    print(f"load average now (1, 5, 15 min): {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| stage | what | count | s each | s |")
    print("| --- | --- | --- | --- | --- |")
    for stage, items in stages.items():
        for item in items:
            print(f"| {stage} | {item.what} | {item.count:g} | {item.seconds_each:.2f} | {item.seconds:.1f} |")
    print("\n| stage | modelled s | limit s (cap, or what is left) | margin s | measured s (status) | model vs measured |")
    print("| --- | --- | --- | --- | --- | --- |")
    for stage, seconds, limit, margin in fitted(stages, caps, args.budget):
        got = measured_stages.get(stage)
        vs = f"{(seconds - got[0]) / got[0]:+.0%}" if got and got[0] else "-"
        print(f"| {stage} | {_shown(seconds)} | {'-' if limit is None else f'{limit:.0f}'} | "
              f"{'-' if margin is None else f'{margin:+.0f}'} | {f'{_shown(got[0])} ({got[1]})' if got else '-'} | {vs} |")
    total = sum(i.seconds for items in stages.values() for i in items)
    share = CALL_SHARE * CALL_S
    print(f"\nall stages: {total:.0f} s of the {args.budget} s budget ({args.budget - total:+.0f} s); "
          f"{total / CALL_S:.0%} of a {CALL_S} s call ({share:.0f} s is {CALL_SHARE:.0%}: {share - total:+.0f} s)")
    measured_inputs = read_measured_inputs(args.stages_tsv) if args.stages_tsv else {}
    if any(name in constants for name in measured_inputs):
        # the same inputs timed in the session itself: a stage's gap that they share is the machine's
        # load or page cache then and when the constants were measured, not an uncounted process
        print("\n| input | the session's own (stages.tsv) | the model's here | model vs session |")
        print("| --- | --- | --- | --- |")
        for name, got in measured_inputs.items():
            if name in constants and got:
                print(f"| {name} | {got:.2f} | {constants[name]:.2f} | {(constants[name] - got) / got:+.0%} |")
        own = {name: got for name, got in measured_inputs.items() if name in constants}
        if "setup" in measured_stages and own:
            # setup is its two Python processes and little else: with their own timings, the rest of
            # the stage (git, benchmarks.run's own process) is what the comparison tests
            seconds = sum(i.seconds for i in _setup({**constants, **own}, args.constants is None))
            got = measured_stages["setup"][0]
            print(f"\nsetup with the session's own {', '.join(own)}: {_shown(seconds)} s against the "
                  f"measured {_shown(got)} s ({(seconds - got) / got:+.0%})")
    print("\nConstants:")
    for name, (value, source) in CONSTANTS.items():
        shown = constants[name]
        print(f"- {name} = {shown:g}" + (f" (measured here; H200: {value:g}, {source})" if shown != value else f": {source}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
