"""The loop structure of the compiled finite round program, read from its optimised HLO.

On an accelerator every while-loop iteration is a host round trip, and under ``vmap`` a while loop selects
every carried array per seed at every iteration. So (docs/architecture.md#rounds):

* an in-batch step is one iteration of one loop: no while loop is nested in the in-batch loop's body (the
  lazy argmax's fallback rounds are iterations of the in-batch loop itself, ``StepInfo.committed``);
* no while loop carries an array with a T-sized axis: the traces are written after the chunk's loop, and the
  T-sized arrays the loops read (noise, the traces of earlier chunks) pass through them unchanged.
"""
import re

import jax
import pytest

from sketchbo.algorithms import ALGORITHMS, build
from sketchbo.domains import finite, finite_program
from sketchbo.engine.prepare import prepare
from sketchbo.engine.run import check_run
from sketchbo.problems import make_problem

T = 389  # a horizon no other dimension of the program has (A = 300, m_max = 128, L = 256, 18 blocks of 17)


def compiled_chunk_hlo(algorithm: str, seed_axis: str = "vmap") -> str:
    spec = check_run(algorithm, make_problem("gp_sample", A=300, d=2, seed=0), T=T, n_seeds=3, seed_axis=seed_axis)
    prep = prepare(spec)
    keys, params, shared = prep.waves[0].init_args  # the program's elements (map: one seed per wave)
    static = finite.make_static(algorithm, spec.hypers[0], 300, 2, T, "rbf", prep.capacities)
    init_fn, chunk_fn = finite.make_program(build(ALGORITHMS[algorithm], static), T, seed_axis, 4)
    carry, noise = jax.eval_shape(init_fn, keys, params, shared)
    return chunk_fn.lower(keys, carry, noise, params, shared).compile().as_text()


# ------------------------------------------------------------------------------ a small HLO reader

def computations(hlo: str) -> tuple[dict, str]:
    """({computation name: its instruction lines}, the entry computation's name)."""
    comps, entry, name = {}, None, None
    for line in hlo.splitlines():
        head = re.match(r"^(ENTRY )?%([\w.\-]+) ", line)
        if head and line.rstrip().endswith("{"):
            name = head.group(2)
            comps[name] = []
            entry = name if head.group(1) else entry
        elif line.startswith("}"):
            name = None
        elif name is not None:
            comps[name].append(line.strip())
    return comps, entry


REF = re.compile(r"\b(condition|body|to_apply|calls|true_computation|false_computation)=%([\w.\-]+)")


def called(line: str) -> list[tuple[str, str]]:
    refs = REF.findall(line)
    for group in re.findall(r"branch_computations=\{([^}]*)\}", line):
        refs += [("branch", c.strip().lstrip("%")) for c in group.split(",")]
    return refs


def split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets, braces and parentheses."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


def _closing(text: str) -> int:
    """Index of the parenthesis closing the one opened just before ``text``."""
    depth = 1
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return i
    raise ValueError("unbalanced parentheses")


class Loop:
    def __init__(self, line: str, comps: dict):
        self.line = line
        self.body = re.search(r"\bbody=%([\w.\-]+)", line).group(1)
        tuple_type = re.search(r"= \((.*?)\) while\(", line).group(1)
        self.shapes = split_top(re.sub(r"/\*.*?\*/", "", tuple_type))
        self.comps = comps

    def nested_loops(self) -> int:
        """While loops reachable from this loop's body."""
        return sum(" while(" in line for line in self.reachable_lines())

    def reachable_lines(self) -> list[str]:
        """The instructions of this loop's body and of every computation it calls (fusions, branches, loops)."""
        seen, todo, out = set(), [self.body], []
        while todo:
            c = todo.pop()
            if c in seen:
                continue
            seen.add(c)
            out += self.comps.get(c, [])
            for line in self.comps.get(c, []):
                todo += [target for _, target in called(line)]
        return out

    def carried(self) -> list[int]:
        """Tuple indices the body changes (its root's element i is not the parameter's element i)."""
        lines = self.comps[self.body]
        gte = {}
        for line in lines:
            m = re.match(r"%([\w.\-]+) = .* get-tuple-element\(%[\w.\-]+\), index=(\d+)", line)
            if m:
                gte[m.group(1)] = int(m.group(2))
        root = re.sub(r"/\*.*?\*/", "", next(line for line in lines if line.startswith("ROOT ")))
        args = root[root.index(" tuple(") + len(" tuple("):]
        operands = split_top(args[:_closing(args)])
        return [i for i, op in enumerate(operands) if gte.get(op.lstrip("%")) != i]


def loops(hlo: str) -> list[Loop]:
    comps, _ = computations(hlo)
    return [Loop(line, comps) for lines in comps.values() for line in lines if " while(" in line]


def has_T_axis(shape: str) -> bool:
    dims = re.match(r"\w+\[([\d,]*)\]", shape)
    return dims is not None and str(T) in dims.group(1).split(",")


def in_batch_loop(hlo: str) -> Loop:
    """The in-batch loop of a chunk of 3 vmapped seeds: the one loop that carries the L-buffer of selections."""
    L = finite_program.ROUND_BUFFER
    found = [lp for lp in loops(hlo) if any(re.fullmatch(rf"s32\[3,{L}\]\S*", s) for s in lp.shapes)
             and not any(s.startswith(f"s32[4,3,{L}]") for s in lp.shapes)]
    assert len(found) == 1, [lp.line[:160] for lp in loops(hlo)]
    return found[0]


# ------------------------------------------------------------------------------------------ tests

@pytest.mark.parametrize("algorithm", ["bbkb", "bkb"])
def test_an_in_batch_step_is_one_loop_iteration_and_no_loop_carries_the_traces(algorithm):
    hlo = compiled_chunk_hlo(algorithm)
    all_loops = loops(hlo)
    assert in_batch_loop(hlo).nested_loops() == 0  # no fallback loop (nor any other) inside a step
    for lp in all_loops:
        t_sized = [i for i, s in enumerate(lp.shapes) if has_T_axis(s)]
        assert not set(t_sized) & set(lp.carried()), (lp.line[:200], [lp.shapes[i] for i in t_sized])


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the CPU's top-k (common.candidate_indices)")
def test_the_in_batch_step_sorts_nothing_on_the_cpu():
    """The lazy argmax's candidates come from XLA:CPU's top-k routine, never from a sort of a whole block or table
    (common.candidate_indices: a top-k whose slice XLA folded into its consumers ran as a full sort)."""
    body = in_batch_loop(compiled_chunk_hlo("bbkb")).reachable_lines()
    assert not [line for line in body if " sort(" in line]
    assert any('custom_call_target="TopK"' in line for line in body)


def test_the_reader_sees_the_loops_it_is_asked_about():
    """The HLO reader on a program with known loops: a while nested in a while, a T-sized carry changed by
    the body, and a T-sized array passed through unchanged."""
    import jax.numpy as jnp

    def prog(x, c):  # x (T,) changed by the outer loop, c (T,) only read
        def inner(v):
            return jax.lax.while_loop(lambda s: s[0] < v[0] + 3, lambda s: (s[0] + 1, s[1] * 2), (v[0], v[1]))[1]

        def body(s):
            i, v = s
            return i + 1, v.at[i].set(inner(jnp.stack([v[i], c[i]])) + c[(i + 1) % T])

        return jax.lax.while_loop(lambda s: s[0] < T, body, (0, x))[1]

    hlo = jax.jit(prog).lower(jnp.zeros((T,)), jnp.ones((T,))).compile().as_text()
    found = loops(hlo)
    outer = [lp for lp in found if any(has_T_axis(s) for s in lp.shapes)]
    assert len(outer) == 1 and outer[0].nested_loops() >= 1
    t_sized = [i for i, s in enumerate(outer[0].shapes) if has_T_axis(s)]
    changed = set(t_sized) & set(outer[0].carried())
    assert len(changed) == 1  # x is carried; c (if XLA kept it in the tuple) passes through
