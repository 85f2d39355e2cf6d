"""TRN504 single-process-data-loading (strict): a DataLoader with num_workers=0
(the default) over an in-file Dataset whose __getitem__ (or a method it calls)
reads or decodes files. Every item is then read and decoded in the training
process, between GPU steps, and the GPU idles while it does. Strict: small
datasets, notebooks and debugging runs load fine in-process. No fix: a good
worker count depends on the machine and on the dataset being picklable."""

from __future__ import annotations

import libcst as cst

from ..analysis.model import dataset_classes_of, lineage_of, reachable_methods
from ..analysis.values import arg
from ..analysis.vocab import vocab
from ..rule import Related, Rule
from ..walk import iter_nodes


class SingleProcessDataLoading(Rule):
    CODE = "TRN504"
    READS = ("names", "objects", "classes", "functions", "seeding")

    def visit_Call(self, node: cst.Call) -> None:
        v = vocab()
        if (self.names.qualify(node.func) or "") not in v.dataloaders or any(a.star for a in node.args):
            return
        workers = arg(node, v.dataloader_positions["num_workers"], "num_workers")
        if workers is not None and not (isinstance(workers, cst.Integer) and workers.value == "0"):
            return
        dataset = arg(node, v.dataloader_positions["dataset"], "dataset")
        klass = self.walk.klass.name.value if self.walk.klass is not None else ""
        for name in dataset_classes_of(self.model, self.scope(), dataset, self.walk.order, klass):
            io = self._io_call(name)
            if io is None:
                continue
            message = (f"`{name}` reads or decodes files in `__getitem__`, and this DataLoader loads in the main "
                       f"process (num_workers=0): every batch is read between training steps while the GPU waits; "
                       f"set `num_workers` (e.g. to the number of CPU cores per GPU)")
            self.report(node, message, related=[Related(io, "per-item I/O here")])
            return

    def _io_call(self, klass: str) -> cst.Call | None:
        calls = vocab().item_io_calls
        reachable = reachable_methods(self.model, klass)
        for owner in lineage_of(self.model, klass):
            for method in reachable:
                info = self.model.function(f"self.{method}", owner)
                if info is None or info.node is None:
                    continue
                for node in iter_nodes(info.node):
                    if isinstance(node, cst.Call) and (self.names.qualify(node.func) or "") in calls:
                        return node
        return None
