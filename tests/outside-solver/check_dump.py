#!/usr/bin/env python3
"""Check the optimum of `hwwfc schedule --dump-problem FILE` with an outside MILP solver.

For every dump given on the command line this script

1. reads the reduced problem (format "hwwfc-problem", version 1 or 2,
   documented at the top of host/src/output/dump.rs): layers with their
   surviving states and unary costs, edges (a DAG, producer first) with a
   transition matrix whose rows are the producer's states in order, columns
   the consumer's, and `null` where the pair is incompatible;
2. evaluates the dump's own `optimum.states` independently: every state must
   exist in its layer, every edge's pair must be compatible, and the cost is
   the sum of the chosen states' `unary_us` plus every edge's `transition_us`;
3. solves the problem exactly as a MILP with PuLP and its bundled CBC;
4. compares the solver's optimum with `optimum.cost_us` of the dump.

Version 2 adds `optimum.solver` ("exact" or "wfc") and `optimum.optimal`
(version 1 dumps are always the exact solver's, optimal). Where `optimal` is
false the DAG's loop cutset was over the tool's exact-solver budget and the
dump's states are WFC's schedule, not a proven optimum: a difference is then
not a failure; the solver's optimum is reported as the true optimum and
WFC's gap to it, (wfc - optimum) / optimum * 100 percent, both evaluated by
this script from the assignments (no gap where the dump's are invalid). WFC's
cost below the solver's optimum by more than `--tol` is still a failure (it
would be a bug in one of the two), as are an invalid assignment and a solver
that does not prove optimality.

Formulation
-----------
Binary x[l,s], one-hot per layer (sum_s x[l,s] = 1); objective
sum unary[l,s] * x[l,s] plus the transition costs. Per edge (from -> to):

* support constraints, always: for every consumer state b,
  x[to,b] <= sum of x[from,a] over the a compatible with b, and for every
  producer state a, x[from,a] <= sum of x[to,b] over the b compatible with a.
  With one-hot x these forbid exactly the incompatible pairs. A constraint
  whose right-hand side covers the whole layer is implied by the one-hot
  constraint and is left out (on specs with free, fully compatible
  transitions this leaves an edge with no constraint at all);
* if the edge has non-zero costs, all nonnegative: a continuous
  y[a,b] in [0, 1] for each compatible pair of non-zero cost, with
  y[a,b] >= x[from,a] + x[to,b] - 1 and cost * y[a,b] in the objective.
  Minimisation drives y[a,b] to max(0, x[from,a] + x[to,b] - 1), which is
  exact because the costs are nonnegative;
* if some cost is negative (or with `--formulation full`): the standard
  linearisation, y[a,b] in [0, 1] for every compatible pair, with
  sum_b y[a,b] = x[from,a] and sum_a y[a,b] = x[to,b]; incompatible pairs
  have no y and so cannot both be chosen.

Output and exit status
----------------------
One block of lines per dump and, at the end, a Markdown table (also written
to `--markdown FILE`). The exit status is 1 if, for any dump, the solver's
optimum and the dump's `cost_us` differ by more than `--tol` (relative,
default 1e-4: the tool's costs are f32 sums; for an `optimal: false` dump,
only if `cost_us` is below the solver's optimum), the solver does not reach
optimality (within `--time-limit`, default 600 s per dump), the dump's own
assignment is invalid, or its independent evaluation differs from `cost_us`
by more than `--tol`; 2 on a malformed dump or a usage error; 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

try:
    import pulp
except ImportError:  # pragma: no cover - depends on the environment
    sys.stderr.write("check_dump.py needs PuLP: pip install pulp\n")
    sys.exit(2)


class DumpError(Exception):
    """A dump that does not follow the documented format."""


@dataclass
class Problem:
    """The reduced problem of one dump, with states by position."""

    spec: str
    model: str
    # Per layer: the state indices (the dump's "index" field), in order.
    state_ids: list[list[int]]
    # Per layer: the unary cost of each state, by position.
    unary: list[list[float]]
    # Per edge: (from, to, matrix), matrix[a][b] a float or None (incompatible).
    edges: list[tuple[int, int, list[list[Optional[float]]]]]
    # The dump's optimum: state indices (by "index"), and its cost.
    dump_states: list[int]
    dump_cost: float
    # Format version; which of the tool's solvers gave the dump's states, and
    # whether they are a proven optimum (version 1: always "exact", True).
    version: int = 1
    dump_solver: str = "exact"
    dump_optimal: bool = True


@dataclass
class Evaluation:
    """The independent evaluation of an assignment."""

    cost: Optional[float]  # None when the assignment is invalid
    errors: list[str] = field(default_factory=list)


@dataclass
class Result:
    """What was found for one dump."""

    path: str
    problem: Problem
    layers: int
    edges: int
    states: int
    x_vars: int
    y_vars: int
    constraints: int
    formulation: str
    status: str
    solver_cost: Optional[float]
    solver_states: Optional[list[int]]
    solver_eval: Evaluation
    dump_eval: Evaluation
    rel_diff: Optional[float]
    # WFC's gap to the solver's optimum in percent, for an optimal=false dump.
    gap_pct: Optional[float]
    # The best assignment's cost where the solver stopped without proof.
    incumbent: Optional[float]
    solve_s: float
    build_s: float
    failures: list[str]


def load(path: str) -> Problem:
    """Read and validate one dump; raise DumpError on a malformed one."""
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    if d.get("format") != "hwwfc-problem":
        raise DumpError(f"format is {d.get('format')!r}, not 'hwwfc-problem'")
    version = d.get("version")
    if version not in (1, 2) or isinstance(version, bool):
        raise DumpError(f"version {version!r} is not supported (1 and 2 are)")
    layers = d["layers"]
    state_ids, unary = [], []
    for pos, layer in enumerate(layers):
        if layer.get("index", pos) != pos:
            raise DumpError(f"layer at position {pos} has index {layer.get('index')}")
        ids = [s["index"] for s in layer["states"]]
        if len(set(ids)) != len(ids):
            raise DumpError(f"layer {pos} lists a state index twice")
        state_ids.append(ids)
        unary.append([float(s["unary_us"]) for s in layer["states"]])
    edges = []
    for k, e in enumerate(d["edges"]):
        a, b, m = e["from"], e["to"], e["transition_us"]
        if not (0 <= a < len(layers) and 0 <= b < len(layers)) or a == b:
            raise DumpError(f"edge {k}: bad endpoints {a} -> {b}")
        if len(m) != len(state_ids[a]) or any(len(r) != len(state_ids[b]) for r in m):
            raise DumpError(
                f"edge {k} ({a} -> {b}): matrix is not "
                f"{len(state_ids[a])} x {len(state_ids[b])}"
            )
        edges.append((a, b, [[None if v is None else float(v) for v in r] for r in m]))
    opt = d["optimum"]
    dump_solver, dump_optimal = "exact", True
    if version >= 2:
        dump_solver, dump_optimal = opt["solver"], opt["optimal"]
        if dump_solver not in ("exact", "wfc"):
            raise DumpError(f"optimum.solver is {dump_solver!r}, not 'exact' or 'wfc'")
        if not isinstance(dump_optimal, bool):
            raise DumpError(f"optimum.optimal is {dump_optimal!r}, not a boolean")
    return Problem(
        spec=str(d.get("spec", "?")),
        model=str(d.get("model", "?")),
        state_ids=state_ids,
        unary=unary,
        edges=edges,
        dump_states=list(opt["states"]),
        dump_cost=float(opt["cost_us"]),
        version=version,
        dump_solver=dump_solver,
        dump_optimal=dump_optimal,
    )


def evaluate(p: Problem, states: list[int]) -> Evaluation:
    """Cost of an assignment given by state indices, checking that it is valid.

    Valid means: one state per layer, each among its layer's surviving states,
    and every edge's pair compatible (non-null in the matrix).
    """
    ev = Evaluation(cost=None)
    if len(states) != len(p.state_ids):
        ev.errors.append(f"{len(states)} states for {len(p.state_ids)} layers")
        return ev
    pos = []
    for l, s in enumerate(states):
        try:
            pos.append(p.state_ids[l].index(s))
        except ValueError:
            ev.errors.append(f"layer {l}: state {s} is not among its surviving states")
    if ev.errors:
        return ev
    total = math.fsum(p.unary[l][i] for l, i in enumerate(pos))
    for a, b, m in p.edges:
        t = m[pos[a]][pos[b]]
        if t is None:
            ev.errors.append(
                f"edge {a} -> {b}: states {states[a]}, {states[b]} are incompatible"
            )
        else:
            total += t
    if not ev.errors:
        ev.cost = total
    return ev


def gap_pct(cost: float, opt: float) -> float:
    """The gap of cost to the optimum opt, in percent of opt."""
    if opt == 0:
        return 0.0 if cost == 0 else math.copysign(math.inf, cost)
    return (cost - opt) / abs(opt) * 100.0


def rel(a: float, b: float) -> float:
    """Relative difference of a and b, against the larger magnitude."""
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


def build(p: Problem, formulation: str):
    """The PuLP model of p; returns (model, x, counts, formulation used)."""
    m = pulp.LpProblem("hwwfc", pulp.LpMinimize)
    x = [
        [pulp.LpVariable(f"x_{l}_{i}", cat=pulp.LpBinary) for i in range(len(ids))]
        for l, ids in enumerate(p.state_ids)
    ]
    obj = []
    for l, xs in enumerate(x):
        m += pulp.lpSum(xs) == 1, f"onehot_{l}"
        obj.extend(zip(xs, p.unary[l]))
    n_y = 0
    used = set()
    for k, (fa, fb, mat) in enumerate(p.edges):
        na, nb = len(p.state_ids[fa]), len(p.state_ids[fb])
        costs = [v for r in mat for v in r if v is not None]
        nonzero = any(v != 0 for v in costs)
        negative = any(v < 0 for v in costs)
        full = formulation == "full" or negative
        if full:
            used.add("full")
            y = {
                (i, j): pulp.LpVariable(f"y_{k}_{i}_{j}", 0, 1)
                for i in range(na)
                for j in range(nb)
                if mat[i][j] is not None
            }
            n_y += len(y)
            for i in range(na):
                m += pulp.lpSum(y[i, j] for j in range(nb) if (i, j) in y) == x[fa][i], f"row_{k}_{i}"
            for j in range(nb):
                m += pulp.lpSum(y[i, j] for i in range(na) if (i, j) in y) == x[fb][j], f"col_{k}_{j}"
            obj.extend((v, mat[i][j]) for (i, j), v in y.items() if mat[i][j] != 0)
            continue
        used.add("support+y" if nonzero else "support")
        for j in range(nb):
            comp = [i for i in range(na) if mat[i][j] is not None]
            if len(comp) < na:
                m += x[fb][j] <= pulp.lpSum(x[fa][i] for i in comp), f"supp_to_{k}_{j}"
        for i in range(na):
            comp = [j for j in range(nb) if mat[i][j] is not None]
            if len(comp) < nb:
                m += x[fa][i] <= pulp.lpSum(x[fb][j] for j in comp), f"supp_from_{k}_{i}"
        if nonzero:
            for i in range(na):
                for j in range(nb):
                    v = mat[i][j]
                    if v is not None and v != 0:
                        y = pulp.LpVariable(f"y_{k}_{i}_{j}", 0, 1)
                        n_y += 1
                        m += y >= x[fa][i] + x[fb][j] - 1, f"and_{k}_{i}_{j}"
                        obj.append((y, v))
    m += pulp.LpAffineExpression(obj)
    n_x = sum(len(xs) for xs in x)
    return m, x, (n_x, n_y, len(m.constraints)), "+".join(sorted(used)) or "none"


def check(path: str, args) -> Result:
    """Solve one dump and compare it with the dump's optimum."""
    p = load(path)
    failures = []
    dump_eval = evaluate(p, p.dump_states)
    if dump_eval.cost is None:
        failures.append("dump's assignment is invalid: " + "; ".join(dump_eval.errors))
    elif rel(dump_eval.cost, p.dump_cost) > args.tol:
        failures.append(
            f"dump's assignment evaluates to {dump_eval.cost:.6f}, "
            f"not its cost_us {p.dump_cost:.6f}"
        )

    t0 = time.perf_counter()
    model, x, (n_x, n_y, n_c), form = build(p, args.formulation)
    build_s = time.perf_counter() - t0
    solver = pulp.PULP_CBC_CMD(
        msg=args.msg, gapRel=0, gapAbs=0, timeLimit=args.time_limit, threads=1
    )
    t0 = time.perf_counter()
    model.solve(solver)
    solve_s = time.perf_counter() - t0
    status = pulp.LpStatus[model.status]
    sol_status = pulp.LpSolution.get(model.sol_status, str(model.sol_status))

    solver_cost = solver_states = None
    solver_eval = Evaluation(cost=None)
    rd = gap = incumbent = None
    if model.status == pulp.LpStatusOptimal and model.sol_status == pulp.LpSolutionOptimal:
        solver_cost = float(pulp.value(model.objective) or 0.0)
        solver_states = []
        for l, xs in enumerate(x):
            chosen = [i for i, v in enumerate(xs) if (v.varValue or 0) > 0.5]
            if len(chosen) != 1:
                failures.append(f"solver chose {len(chosen)} states in layer {l}")
                solver_states = None
                break
            solver_states.append(p.state_ids[l][chosen[0]])
        if solver_states is not None:
            solver_eval = evaluate(p, solver_states)
            if solver_eval.cost is None:
                failures.append("solver's assignment is invalid: " + "; ".join(solver_eval.errors))
            elif rel(solver_eval.cost, solver_cost) > args.tol:
                failures.append(
                    f"solver's objective {solver_cost:.6f} differs from its "
                    f"assignment's evaluation {solver_eval.cost:.6f}"
                )
        rd = rel(solver_cost, p.dump_cost)
        if p.dump_optimal:
            if rd > args.tol:
                failures.append(
                    f"optimum differs: solver {solver_cost:.6f}, dump {p.dump_cost:.6f} "
                    f"(relative {rd:.3e})"
                )
        else:
            # The dump's states are WFC's schedule: any cost at or above the
            # optimum is expected; one below it by more than tol is a bug.
            # The gap is taken from both assignments' own evaluations (exact
            # sums, free of the f32 rounding of cost_us and of CBC's
            # objective), so that equal assignments have a gap of 0; none
            # where the dump's assignment is invalid (already a failure).
            opt_cost = solver_cost if solver_eval.cost is None else solver_eval.cost
            if dump_eval.cost is not None:
                gap = gap_pct(dump_eval.cost, opt_cost)
            if p.dump_cost < solver_cost and rd > args.tol:
                failures.append(
                    f"WFC's cost {p.dump_cost:.6f} is below the solver's optimum "
                    f"{solver_cost:.6f} (relative {rd:.3e})"
                )
    else:
        why = f"{status} / {sol_status}"
        if args.time_limit is not None and solve_s >= 0.95 * args.time_limit:
            why += f", time limit of {args.time_limit:g} s reached"
        if model.sol_status == pulp.LpSolutionIntegerFeasible and model.objective is not None:
            incumbent = float(pulp.value(model.objective) or 0.0)
            why += f"; best assignment found {incumbent:.6f} us"
        failures.append(f"solver did not prove optimality: {why}")

    return Result(
        path=path,
        problem=p,
        layers=len(p.state_ids),
        edges=len(p.edges),
        states=sum(len(s) for s in p.state_ids),
        x_vars=n_x,
        y_vars=n_y,
        constraints=n_c,
        formulation=form,
        status=status,
        solver_cost=solver_cost,
        solver_states=solver_states,
        solver_eval=solver_eval,
        dump_eval=dump_eval,
        rel_diff=rd,
        gap_pct=gap,
        incumbent=incumbent,
        solve_s=solve_s,
        build_s=build_s,
        failures=failures,
    )


def same_assignment(r: Result, tol: float) -> str:
    """Whether the solver's assignment is the dump's; on a tie, say so."""
    if r.solver_states is None:
        return "-"
    if r.solver_states == r.problem.dump_states:
        return "yes"
    if r.dump_eval.cost is not None and r.solver_eval.cost is not None:
        if rel(r.dump_eval.cost, r.solver_eval.cost) <= tol:
            return "no (tie: same cost)"
        return "no (costs differ)"
    return "no"


def fmt(v: Optional[float], spec: str = ".4f") -> str:
    """A number for the table, or '-'."""
    return "-" if v is None else format(v, spec)


def report(r: Result, tol: float) -> None:
    """Print the per-dump block."""
    p = r.problem
    print(f"== {r.path}")
    print(f"   model {p.model}, spec {p.spec}: {r.layers} layers, {r.edges} edges, {r.states} states")
    print(f"   dump version {p.version}, states by the tool's {p.dump_solver} solver, "
          + ("a proven optimum" if p.dump_optimal else "not a proven optimum"))
    print(
        f"   MILP ({r.formulation}): {r.x_vars} binary x + {r.y_vars} continuous y, "
        f"{r.constraints} constraints; built in {r.build_s:.2f} s, solved in {r.solve_s:.2f} s ({r.status})"
    )
    print(f"   solver optimum  {fmt(r.solver_cost, '.6f')} us  states {r.solver_states}")
    print(f"   dump {'optimum' if p.dump_optimal else 'cost   '}    {p.dump_cost:.6f} us  states {p.dump_states}")
    print(f"   dump's states evaluated: {fmt(r.dump_eval.cost, '.6f')} us"
          + (f"  ({'; '.join(r.dump_eval.errors)})" if r.dump_eval.errors else ""))
    print(f"   relative difference {fmt(r.rel_diff, '.3e')}; same assignment: {same_assignment(r, tol)}")
    if not p.dump_optimal:
        gap = "-" if r.gap_pct is None else f"{r.gap_pct:.3f} %"
        print(f"   true optimum (solver) {fmt(r.solver_cost, '.6f')} us; WFC's gap to it {gap}")
    if r.incumbent is not None:
        print(f"   solver stopped without proof; best assignment found {r.incumbent:.6f} us")
    print("   " + ("OK" if not r.failures else "FAIL: " + " | ".join(r.failures)))


def table(results: list[Result], tol: float) -> str:
    """The Markdown table of all results."""
    head = [
        "dump", "model", "spec", "layers", "edges", "states", "variables (x+y)",
        "dump's solver", "solver optimum (us)", "dump cost (us)",
        "dump's states evaluated (us)", "rel. diff", "WFC gap", "same assignment",
        "solve (s)", "result",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        p = r.problem
        row = [
            os.path.basename(r.path), p.model, p.spec, str(r.layers), str(r.edges), str(r.states),
            f"{r.x_vars + r.y_vars} ({r.x_vars}+{r.y_vars})",
            p.dump_solver,
            fmt(r.solver_cost), f"{p.dump_cost:.4f}", fmt(r.dump_eval.cost),
            fmt(r.rel_diff, ".1e"),
            "-" if p.dump_optimal else (fmt(r.gap_pct, ".2f") + " %" if r.gap_pct is not None else "-"),
            same_assignment(r, tol), f"{r.solve_s:.2f}",
            "OK" if not r.failures else "FAIL",
        ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def versions() -> str:
    """PuLP's version and that of the CBC binary it runs."""
    cbc = "unknown"
    try:
        path = pulp.PULP_CBC_CMD().path
        out = subprocess.run(
            [path, "-quit"], capture_output=True, text=True, timeout=20
        ).stdout
        for line in out.splitlines():
            if line.strip().startswith("Version:"):
                cbc = line.split(":", 1)[1].strip()
                break
    except (OSError, subprocess.SubprocessError):
        pass
    return f"PuLP {pulp.__version__}, CBC {cbc}"


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point: check every dump, print the table, return the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dumps", nargs="+", help="JSON files written by hwwfc schedule --dump-problem")
    ap.add_argument("--markdown", metavar="FILE", help="also write the results table to FILE")
    ap.add_argument("--tol", type=float, default=1e-4,
                    help="relative tolerance on the optimum (default 1e-4)")
    ap.add_argument("--formulation", choices=["auto", "full"], default="auto",
                    help="auto: support constraints and y only where costs are non-zero "
                         "(full linearisation if a cost is negative); full: the standard "
                         "linearisation on every edge")
    ap.add_argument("--time-limit", type=float, default=600.0,
                    help="CBC time limit per dump, seconds (default 600; 0: none); "
                         "a dump whose solve stops at the limit without proof fails")
    ap.add_argument("--msg", action="store_true", help="show CBC's log")
    args = ap.parse_args(argv)
    if args.time_limit is not None and args.time_limit <= 0:
        args.time_limit = None

    print(versions())
    results, malformed = [], []
    for path in args.dumps:
        try:
            r = check(path, args)
        except (OSError, ValueError, KeyError, TypeError, DumpError) as e:
            print(f"== {path}\n   MALFORMED: {type(e).__name__}: {e}")
            malformed.append(path)
            continue
        report(r, args.tol)
        results.append(r)

    md = table(results, args.tol)
    print()
    print(md, end="")
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(md)
    failed = [r for r in results if r.failures]
    agree = sum(1 for r in results if not r.failures and r.problem.dump_optimal)
    wfc = [r for r in results if not r.failures and not r.problem.dump_optimal]
    print(f"\n{len(results) - len(failed)} of {len(args.dumps)} dumps pass: "
          f"{agree} optimum{'' if agree == 1 else 's'} agree{'s' if agree == 1 else ''}"
          + (f", {len(wfc)} WFC schedule{'' if len(wfc) == 1 else 's'} (optimal=false) checked against the solver's optimum"
             f" (gaps {', '.join(fmt(r.gap_pct, '.2f') + ' %' for r in wfc)})" if wfc else "")
          + (f"; {len(failed)} failed" if failed else "")
          + (f"; {len(malformed)} malformed" if malformed else ""))
    if failed:
        return 1
    if malformed:
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
