"""Copied as `sitecustomize.py` into the folder TRAINDOCTOR_ANOMALY_DIR, which `traindoctor run
--anomaly` puts first on PYTHONPATH: loaded at interpreter start-up in every process of the run,
so the user's script stays unchanged. Never imported from here.

- When the process imports torch, switch autograd's anomaly detection on, so that a
  backward error names the forward call that created the failing node. It also checks
  every backward output for NaN unless TRAINDOCTOR_ANOMALY_CHECK_NAN=0.
- Copy torch's "Error detected in XBackward0. Traceback of forward call that caused the
  error" warning into TRAINDOCTOR_ANOMALY_DIR/<pid>.txt before it is shown. It is written
  before the exception is raised, so the live session that stops at the exception reads
  it there (the warning itself still goes to stderr as usual, even where the script
  silences warnings).
- Then run the sitecustomize this one hides, if there is one.

Standalone on purpose: the user's interpreter need not have traindoctor installed.
"""

import os
import sys

_DIRECTORY = os.environ.get("TRAINDOCTOR_ANOMALY_DIR")
_CHECK_NAN = os.environ.get("TRAINDOCTOR_ANOMALY_CHECK_NAN", "1") != "0"
_HERE = os.path.dirname(os.path.abspath(__file__))
_MARK = "Traceback of forward call that caused the error"


def _enable_when_torch_loads():
    import importlib.util

    class _EnableAnomaly:
        """A meta-path finder that lets torch load, then turns anomaly detection on."""

        def find_spec(self, name, path=None, target=None):
            if name != "torch":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec("torch")
            loader = getattr(spec, "loader", None)
            if loader is None or not hasattr(loader, "exec_module"):
                return spec
            exec_module = loader.exec_module

            def exec_and_enable(module):
                exec_module(module)
                module.autograd.set_detect_anomaly(True, check_nan=_CHECK_NAN)

            loader.exec_module = exec_and_enable
            return spec

    sys.meta_path.insert(0, _EnableAnomaly())


def _record_forward_traces():
    import warnings

    show = warnings._showwarnmsg  # what both warnings.warn and torch's C++ warnings call to display

    def show_and_record(message):
        try:
            text = str(message.message)
            if _MARK in text:
                path = os.path.join(_DIRECTORY, f"{os.getpid()}.txt")
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(warnings.formatwarning(message.message, message.category, message.filename,
                                                        message.lineno, message.line))
        except Exception:  # recording is best effort: the user's warning must still show
            pass
        show(message)

    warnings._showwarnmsg = show_and_record

    # Training scripts often silence warnings (`warnings.filterwarnings("ignore")`); this one is
    # what the user asked for by running with anomaly detection, so its filter stays first.
    add_filter, simple_filter = warnings.filterwarnings, warnings.simplefilter

    def keep_first():
        add_filter("always", message="Error detected in", category=UserWarning)

    def filterwarnings(*args, **kwargs):
        add_filter(*args, **kwargs)
        keep_first()

    def simplefilter(*args, **kwargs):
        simple_filter(*args, **kwargs)
        keep_first()

    warnings.filterwarnings, warnings.simplefilter = filterwarnings, simplefilter
    keep_first()


def _run_hidden_sitecustomize():
    import importlib.machinery
    import importlib.util

    others = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if _DIRECTORY and "torch" not in sys.modules:
    _enable_when_torch_loads()
    _record_forward_traces()
_run_hidden_sitecustomize()
