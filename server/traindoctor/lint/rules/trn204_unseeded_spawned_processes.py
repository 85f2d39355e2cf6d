"""TRN204 unseeded-spawned-processes: the program seeds, but the function it
starts with `torch.multiprocessing.spawn`/`start_processes` (or `Process(target=fn)` after
`set_start_method("spawn")`/`"forkserver"`) never does (nor any
in-file function it calls). A spawned process is a fresh interpreter: it does not
inherit the parent's seed (module-level code outside `if __name__ == "__main__":`
does run again in each process, so seeding there counts): its torch, NumPy and `random` generators start
unseeded (on torch 2.13 the default generator gets a fresh nondeterministic seed
per process), so the user's seed has no effect on anything the workers draw. The fix repeats the
parent's seed call at the top of the worker when every name it uses is visible
there; unsafe (per-rank offsets such as `seed + rank` are the author's choice)."""

from __future__ import annotations

import libcst as cst

from ..analysis.facts import Marker, Seed
from ..analysis.names import dotted_name
from ..rule import FixSpec, InsertBefore, Related, Rule
from ..walk import iter_nodes

_SEEDING = ("torch", "cuda_all", "numpy", "random", "all", "helper")


class UnseededSpawnedProcesses(Rule):
    CODE = "TRN204"
    READS = ("names", "functions", "seeding", "program", "layout", "constants", "project")

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.walk.klass is not None:
            return
        name = node.name.value
        markers = [m for m in self.model.facts["program"] if isinstance(m, Marker)]
        spawned = ("spawn-fn", "process-fn") if any(m.kind == "spawn-start" for m in markers) else ("spawn-fn",)
        spawn = next((m for m in markers if m.kind in spawned and m.text == name), None)
        if spawn is None or self.model.function(name) is None:
            return
        reached = self._reachable(name)
        seeds = [s for s in self.model.seeds if s.kind in _SEEDING]
        if any(s.function in reached for s in seeds) or self._project_seeding(reached):
            return  # the worker seeds (itself or through an in-file helper, or one of another project file)
        if any(s.function == "" and not self._under_main_guard(s) for s in seeds):
            return  # spawn re-imports the script: module-level seeding runs in every process
        parent = next((s for s in seeds if "." not in s.function and not self.model.in_worker(s)), None)
        if parent is None:
            return  # a program that never seeds wants varied randomness
        message = (f"`{name}` runs in processes started by `spawn`, which do not inherit the parent's seed "
                   f"(`{parent.name}({parent.seed})`): their torch, NumPy and `random` generators start unseeded, "
                   f"so the seed has no effect on initialisation, dropout or shuffling in the workers and runs "
                   f"differ; seed at the top of `{name}`")
        self.report(node.name, message, fix=self._fix(node, parent),
                    related=[Related(spawn.node, "started here"), Related(parent.node, "the parent seeds here")])

    def _project_seeding(self, reached: set[str]) -> bool:
        """A function of another project file, called in `reached`, seeds a global RNG."""
        for name in reached:
            for call in iter_nodes(self.model.function(name).node):
                if isinstance(call, cst.Call):
                    if self.model.project_fact(dotted_name(call.func) or "", "seeds"):
                        return True
        return False

    def _under_main_guard(self, seed: Seed) -> bool:
        for top in self.model.facts["layout"]:
            if isinstance(top.node, cst.If) and "__main__" in cst.Module(body=[]).code_for_node(top.node.test):
                if any(n is seed.node for n in iter_nodes(top.node)):
                    return True
        return False

    def _reachable(self, name: str) -> set[str]:
        found, todo = set(), [name]
        while todo and len(found) < 50:
            current = todo.pop()
            info = self.model.function(current)
            if current in found or info is None:
                continue
            found.add(current)
            for call in iter_nodes(info.node):
                if isinstance(call, cst.Call) and isinstance(call.func, cst.Name):
                    todo.append(call.func.value)
        return found

    def _fix(self, node: cst.FunctionDef, parent: Seed) -> FixSpec | None:
        """The parent's seed calls (those of its function, one seed expression), repeated
        at the top of the worker; behind `if <seed> is not None:` unless the seed is a literal."""
        seeds = [s for s in self.model.seeds if s.function == parent.function and s.kind in _SEEDING]
        if not isinstance(node.body, cst.IndentedBlock) or any(s.stmt is None or s.seed != parent.seed
                                                                for s in seeds) or not parent.seed:
            return None
        params = {p.name.value for p in (*node.params.posonly_params, *node.params.params,
                                         *node.params.kwonly_params)}
        visible = params | self.model.module_names | set(self.names.imports)
        lines: list[str] = []
        for seed in seeds:
            nodes = list(iter_nodes(seed.stmt))
            skip = {id(n.attr) for n in nodes if isinstance(n, cst.Attribute)} | \
                {id(n.keyword) for n in nodes if isinstance(n, cst.Arg) and n.keyword is not None}
            if not {n.value for n in nodes if isinstance(n, cst.Name) and id(n) not in skip} <= visible:
                return None
            text = cst.Module(body=[]).code_for_node(seed.stmt).strip()
            if text not in lines:
                lines.append(text)
        # `args.seed` may be None, which torch.manual_seed rejects
        if not parent.seed.lstrip("-").isdigit() and parent.seed not in self.model.constants:
            lines = [f"if {parent.seed} is not None:"] + ["    " + line for line in lines]
        body = list(node.body.body)  # after the docstring and `global` statements
        while body and isinstance(body[0], cst.SimpleStatementLine) and (
                isinstance(body[0].body[0], (cst.Global, cst.Nonlocal)) or
                (isinstance(body[0].body[0], cst.Expr) and isinstance(body[0].body[0].value, cst.SimpleString))):
            body.pop(0)
        if not body:
            return None
        first = body[0]
        return FixSpec(f"Seed in {node.name.value}", (InsertBefore(first, "\n".join(lines)),), safe=False)
