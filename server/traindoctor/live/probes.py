"""The fixed probe expressions evaluated in the user's stopped frame.

Each probe is one Python expression (DAP `evaluate`, `context: "watch"`) that
returns a JSON string. The work happens in a fixed code block run by `exec` in
a fresh namespace, so nothing is written back into the user's frame (debugpy
copies changed names back after an evaluation). The code only reads: it never
imports, prints, draws random numbers or changes a tensor; reductions run under
`no_grad` on detached views and are skipped for tensors above a size limit;
every collection is capped so the answer stays small.

In debugpy's evaluation namespace `locals()` is the frame's globals updated
with its locals and `globals()` is the frame's own globals, so the true locals
are the names whose value differs from (or is absent in) the globals.
"""

from __future__ import annotations

import ast
import json
from typing import Any

# Reductions (NaN/inf counts, min/max/mean) are skipped above this many elements.
MAX_REDUCE_ELEMENTS = 16_000_000
MAX_TENSORS = 48
MAX_MODULES = 8
MAX_OPTIMIZERS = 4
MAX_LAYERS = 24
MAX_TEXT = 12_000
MAX_SCALARS = 24

# Shared helpers, prepended to every probe body. `ns` is the evaluation
# namespace (globals + locals), `fg` the frame's globals.
_PRELUDE = r'''
import sys as import_sys  # both already loaded (debugpy uses json): a lookup, not a fresh import
import json
mods = import_sys.modules
torch = mods.get('torch')
fgd = fg if isinstance(fg, dict) else {}
def is_a(v, cls):
    # type(v), never v.__class__ (a property user code may override), decides.
    return cls is not None and issubclass(type(v), cls)
def no_torch_function():
    # Tensor subclasses' __torch_function__ is user code: switch it off while we read.
    guard = getattr(getattr(torch, '_C', None), 'DisableTorchFunctionSubclass', None)
    if guard is not None:
        return guard()
    import_contextlib = mods.get('contextlib')
    return import_contextlib.nullcontext()
def own_dispatch(t):
    base = getattr(torch.Tensor, '__torch_dispatch__', None)
    mine = getattr(type(t), '__torch_dispatch__', None)
    return mine is not None and getattr(mine, '__func__', mine) is not getattr(base, '__func__', base)
def is_local(k, v):
    return k not in fgd or fgd[k] is not v
def ordered_names():
    items = [(k, v) for k, v in list(ns.items()) if not k.startswith('__')]
    local = [(k, v) for k, v in items if is_local(k, v)]
    if not local:
        return [(k, v, 'module') for k, v in items]
    seen = set(k for k, _ in local)
    return [(k, v, 'frame') for k, v in local] + [(k, v, 'module') for k, v in items if k not in seen]
def candidates():
    out = []
    for k, v, scope in ordered_names():
        out.append((k, v, scope))
        if k == 'self' and v is not None:
            try:
                attrs = dict(object.__getattribute__(v, '__dict__'))
            except Exception:
                attrs = {}
            for sub in ('_parameters', '_buffers', '_modules'):
                inner = attrs.pop(sub, None)
                if isinstance(inner, dict):
                    for ik, iv in list(inner.items())[:64]:
                        if iv is not None:
                            out.append(('self.' + ik, iv, 'self'))
            for ik, iv in list(attrs.items())[:128]:
                if not ik.startswith('__'):
                    out.append(('self.' + ik, iv, 'self'))
    return out
'''

_TENSORS = r'''
def summarize(name, t, scope):
    with no_torch_function():
        return summarize_plain(name, t, scope)
def summarize_plain(name, t, scope):
    s = {'name': name, 'scope': scope, 'shape': list(t.shape), 'dtype': str(t.dtype).replace('torch.', ''),
         'device': str(t.device), 'requires_grad': bool(t.requires_grad),
         'grad_fn': type(t.grad_fn).__name__ if t.grad_fn is not None else None,
         'numel': int(t.numel()), 'version': int(t._version), 'is_leaf': bool(t.is_leaf)}
    if type(t) is not torch.Tensor and not issubclass(type(t), torch.nn.Parameter):
        s['subclass'] = type(t).__name__
    if t.is_sparse or t.device.type == 'meta' or t.numel() == 0:
        return s
    if own_dispatch(t):
        s['skipped'] = 'values not read: %s overrides __torch_dispatch__ (user code)' % type(t).__name__
        return s
    if t.numel() > LIMIT:
        s['skipped'] = 'larger than %d elements' % LIMIT
        return s
    try:
        with torch.no_grad():
            d = t.detach()
            if d.is_floating_point() or d.is_complex():
                s['nan_count'] = int(torch.isnan(d).sum().item())
                s['inf_count'] = int(torch.isinf(d).sum().item())
                if d.is_floating_point():
                    finite = d[torch.isfinite(d)] if (s['nan_count'] or s['inf_count']) else d
                    if finite.numel():
                        f = finite.double()
                        s['min'] = float(f.min().item()); s['max'] = float(f.max().item()); s['mean'] = float(f.mean().item())
            elif d.dtype != torch.bool:
                s['min'] = float(d.min().item()); s['max'] = float(d.max().item())
    except Exception as e:
        s['error'] = type(e).__name__ + ': ' + str(e)[:200]
    return s
found = []
seen = set()
if torch is not None:
    T = torch.Tensor
    for k, v, scope in candidates():
        if len(found) >= MAXT:
            break
        if is_a(v, T):
            if id(v) not in seen:
                seen.add(id(v)); found.append(summarize(k, v, scope))
        elif type(v) in (list, tuple) and 0 < len(v) <= 8:
            for i, e in enumerate(v):
                if is_a(e, T) and id(e) not in seen and len(found) < MAXT:
                    seen.add(id(e)); found.append(summarize('%s[%d]' % (k, i), e, scope))
__td_out = json.dumps(found)
'''

_MODULES = r'''
def module_summary(name, m, scope):
    with no_torch_function():
        return module_summary_plain(name, m, scope)
def library_extra_repr(lm):
    # A layer's own extra_repr is torch's for torch layers; a user layer's is user code.
    method = getattr(type(lm), 'extra_repr', None)
    if str(getattr(method, '__module__', '')).startswith('torch.'):
        return method(lm)[:160]
    return ''
def module_summary_plain(name, m, scope):
    # torch.nn.Module's own methods: a model may override named_parameters() & co.
    Mod = torch.nn.Module
    n = trainable = pbytes = gbytes = bbytes = 0
    devices = {}; dtypes = {}; bad_grads = []
    for i, (pn, p) in enumerate(Mod.named_parameters(m)):
        if i >= 20000:
            break
        n += p.numel(); pbytes += p.numel() * p.element_size()
        if p.requires_grad:
            trainable += p.numel()
        devices[str(p.device)] = 1; dtypes[str(p.dtype).replace('torch.', '')] = 1
        g = p.grad
        if g is not None:
            gbytes += g.numel() * g.element_size()
            if len(bad_grads) < 8 and g.numel() <= LIMIT and g.is_floating_point():
                try:
                    with torch.no_grad():
                        if not bool(torch.isfinite(g).all().item()):
                            bad_grads.append(pn)
                except Exception:
                    pass
    for i, b in enumerate(Mod.buffers(m)):
        if i >= 20000:
            break
        bbytes += b.numel() * b.element_size()
    layers = []
    for i, (ln, lm) in enumerate(Mod.named_modules(m)):
        if len(layers) >= MAXL or i > 4000:
            break
        if ln and not next(iter(Mod.children(lm)), None):
            try:
                extra = library_extra_repr(lm)
            except Exception:
                extra = ''
            layers.append({'name': ln, 'type': type(lm).__name__, 'extra': extra})
    return {'name': name, 'scope': scope, 'id': id(m), 'type': type(m).__name__, 'params': n, 'trainable': trainable,
            'param_bytes': pbytes, 'grad_bytes': gbytes, 'buffer_bytes': bbytes,
            'devices': sorted(devices), 'dtypes': sorted(dtypes), 'training': bool(m.training),
            'nonfinite_grads': bad_grads, 'layers': layers}
found = []
kept = []
seen = set()
if torch is not None:
    M = torch.nn.Module
    for k, v, scope in candidates():
        if len(found) >= MAXM:
            break
        if is_a(v, M) and id(v) not in seen:
            seen.add(id(v)); kept.append(v)
            try:
                found.append(module_summary(k, v, scope))
            except Exception as e:
                found.append({'name': k, 'error': type(e).__name__ + ': ' + str(e)[:200]})
# Name the module holding another so memory is not counted twice.
mods_found = [(f, v) for f, v in zip(found, kept)]
for f, v in mods_found:
    for g, w in mods_found:
        if w is not v and 'error' not in g and g.get('params', 0) >= f.get('params', 0):
            try:
                if any(sub is v for i, sub in zip(range(4000), torch.nn.Module.modules(w))):
                    f['contained_in'] = g['name']
                    break
            except Exception:
                pass
__td_out = json.dumps(found)
'''

_OPTIMIZERS = r'''
found = []
seen = set()
if torch is not None:
    O = torch.optim.Optimizer
    for k, v, scope in candidates():
        if len(found) >= MAXO:
            break
        if is_a(v, O) and id(v) not in seen:
            seen.add(id(v))
            try:
                groups = v.param_groups
                nparams = sum(len(g.get('params', ())) for g in groups)
                sbytes = 0
                for i, st in enumerate(list(v.state.values())):
                    if i >= 20000:
                        break
                    if isinstance(st, dict):
                        for x in st.values():
                            if isinstance(x, torch.Tensor):
                                sbytes += x.numel() * x.element_size()
                lrs = []
                for g in groups[:8]:
                    lr = g.get('lr')
                    lrs.append(float(lr) if isinstance(lr, (int, float)) else (float(lr.item()) if is_a(lr, torch.Tensor) and lr.numel() == 1 else str(lr)))
                settings = {}
                g0 = groups[0] if groups else {}
                for key in ('betas', 'eps', 'weight_decay', 'momentum'):
                    val = g0.get(key)
                    if isinstance(val, (int, float)) and not isinstance(val, bool):
                        settings[key] = float(val)
                    elif isinstance(val, (tuple, list)) and all(isinstance(b, (int, float)) for b in val):
                        settings[key] = [float(b) for b in val]
                found.append({'name': k, 'scope': scope, 'type': type(v).__name__, 'lr': lrs,
                              'param_groups': len(groups), 'params': nparams, 'state_bytes': sbytes,
                              'settings': settings})
            except Exception as e:
                found.append({'name': k, 'type': type(v).__name__, 'error': type(e).__name__ + ': ' + str(e)[:200]})
    # A GradScaler's scale (AMP): get_scale() reads the scale tensor, never initialises CUDA.
    S = getattr(getattr(torch, 'amp', None), 'GradScaler', None)
    for k, v, scope in candidates() if S is not None else ():
        if len(found) >= MAXO + 2:
            break
        if is_a(v, S) and id(v) not in seen:
            seen.add(id(v))
            try:
                found.append({'name': k, 'type': type(v).__name__, 'scaler': True, 'enabled': bool(v.is_enabled()),
                              'scale': float(v.get_scale())})
            except Exception as e:
                found.append({'name': k, 'type': type(v).__name__, 'scaler': True,
                              'error': type(e).__name__ + ': ' + str(e)[:200]})
__td_out = json.dumps(found)
'''

_SCALARS = r'''
found = []
for k, v, scope in candidates():
    if len(found) >= MAXS:
        break
    if scope == 'module' or k == 'self':
        continue
    if v is None or type(v) in (bool, int, float):
        found.append({'name': k, 'type': type(v).__name__, 'value': v if not isinstance(v, float) or v == v and abs(v) != float('inf') else repr(v)})
    elif type(v) is str:
        found.append({'name': k, 'type': 'str', 'value': v[:80]})
__td_out = json.dumps(found)
'''

_ENV = r'''
os = mods.get('os')
env = {'python': import_sys.version.split()[0], 'pid': os.getpid() if os else None,
       'argv': [str(a)[:200] for a in import_sys.argv[:16]]}
if os is not None:
    for key in ('RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'LOCAL_WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT',
                'TORCHELASTIC_RUN_ID', 'CUDA_VISIBLE_DEVICES', 'PYTORCH_CUDA_ALLOC_CONF', 'PYTORCH_ALLOC_CONF',
                'CUDA_LAUNCH_BLOCKING'):
        if key in os.environ:
            env.setdefault('environ', {})[key] = os.environ[key][:200]
def read_kb(path, keys):
    out = {}
    try:
        with open(path) as fh:
            for line in fh:
                name, _, rest = line.partition(':')
                if name in keys:
                    out[name] = int(rest.split()[0]) * 1024
    except Exception:
        pass
    return out
env['host_memory'] = read_kb('/proc/meminfo', ('MemTotal', 'MemAvailable'))
env['process_memory'] = read_kb('/proc/self/status', ('VmRSS', 'VmHWM'))
if torch is not None:
    env['torch'] = torch.__version__
    env['cuda'] = torch.version.cuda
    try:
        env['cudnn'] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    except Exception:
        env['cudnn'] = None
    env['anomaly_detection'] = bool(torch.is_anomaly_enabled())
    env['grad_enabled'] = bool(torch.is_grad_enabled())
    dist = getattr(torch, 'distributed', None)
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            env['dist'] = {'rank': dist.get_rank(), 'world_size': dist.get_world_size(), 'backend': str(dist.get_backend())}
    except Exception:
        pass
    data = mods.get('torch.utils.data._utils.worker')
    info = getattr(data, '_worker_info', None) if data is not None else None
    if info is not None:
        env['worker'] = {'id': int(info.id), 'num_workers': int(info.num_workers)}
    cuda = torch.cuda
    # Never initialise CUDA from a probe: only read it when the program already did.
    if cuda.is_available() and cuda.is_initialized():
        dev = cuda.current_device()
        props = cuda.get_device_properties(dev)
        env['device'] = {'index': dev, 'name': props.name, 'total_memory': int(props.total_memory),
                         'capability': '%d.%d' % (props.major, props.minor)}
        env['cuda_memory'] = {'allocated': int(cuda.memory_allocated(dev)), 'reserved': int(cuda.memory_reserved(dev)),
                              'max_allocated': int(cuda.max_memory_allocated(dev)),
                              'max_reserved': int(cuda.max_memory_reserved(dev))}
        try:
            free, total = cuda.mem_get_info(dev)
            env['cuda_memory']['free'] = int(free); env['cuda_memory']['total'] = int(total)
        except Exception:
            pass
__td_out = json.dumps(env, default=str)
'''

_MEMORY_SUMMARY = r'''
summary = None
if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
    summary = torch.cuda.memory_summary(abbreviated=True)[:MAXX]
__td_out = json.dumps(summary)
'''

_TRACEBACK = r'''
text = None
exc = ns.get('__exception__')
if not (type(exc) is tuple and len(exc) == 3 and exc[1] is not None):
    exc = import_sys.exc_info()
tb = mods.get('traceback')
python_function = type(lambda: 0)
def safe_message(e):
    # A __str__ written in Python is user (or library) code: use the args instead.
    if not isinstance(type(e).__str__, python_function):
        return str(e)
    args = BaseException.__getattribute__(e, 'args')
    if all(type(a) in (str, int, float, bool) for a in args):
        return ', '.join(str(a) for a in args) + '  (traindoctor: %s.__str__ not called: user code)' % type(e).__name__
    return '(traindoctor: %s.__str__ not called: user code)' % type(e).__name__
def header(e):
    cls = type(e)
    mod = getattr(cls, '__module__', 'builtins')
    full = cls.__qualname__ if mod in ('builtins', '__main__') else mod + '.' + cls.__qualname__
    message = safe_message(e)
    return full + (': ' + message if message else '')
def chain(e, t, seen, depth=0):
    if e is None or id(e) in seen or depth > 16:
        return []
    seen.add(id(e))
    out = []
    cause = BaseException.__getattribute__(e, '__cause__')
    context = BaseException.__getattribute__(e, '__context__')
    if cause is not None:
        out += chain(cause, cause.__traceback__, seen, depth + 1)
        out.append('\nThe above exception was the direct cause of the following exception:\n\n')
    elif context is not None and not BaseException.__getattribute__(e, '__suppress_context__'):
        out += chain(context, context.__traceback__, seen, depth + 1)
        out.append('\nDuring handling of the above exception, another exception occurred:\n\n')
    if t is not None:
        out.append('Traceback (most recent call last):\n')
        out += tb.format_list(tb.extract_tb(t))
    out.append(header(e) + '\n')
    return out
if type(exc) is tuple and len(exc) == 3 and exc[1] is not None and tb is not None:
    text = ''.join(chain(exc[1], exc[2], set()))
    if len(text) > 60000:
        text = text[:20000] + '\n...\n' + text[-40000:]
__td_out = json.dumps(text)
'''

_CONSTANTS = {
    "LIMIT": MAX_REDUCE_ELEMENTS,
    "MAXT": MAX_TENSORS,
    "MAXM": MAX_MODULES,
    "MAXO": MAX_OPTIMIZERS,
    "MAXL": MAX_LAYERS,
    "MAXX": MAX_TEXT,
    "MAXS": MAX_SCALARS,
}

# name -> (body, when): `when` says when the session evaluates it ("always" or "oom").
_PROBES: dict[str, tuple[str, str]] = {
    "env": (_ENV, "always"),
    "tensors": (_TENSORS, "always"),
    "modules": (_MODULES, "always"),
    "optimizers": (_OPTIMIZERS, "always"),
    "scalars": (_SCALARS, "always"),
    "traceback": (_TRACEBACK, "always"),
    "cuda_memory_summary": (_MEMORY_SUMMARY, "oom"),
}


def _expression(body: str) -> str:
    constants = "".join(f"{k} = {v!r}\n" for k, v in _CONSTANTS.items())
    code = constants + _PRELUDE + body
    # `locals()`/`globals()` are evaluated in debugpy's namespace for the frame;
    # the code runs in its own dict, so the frame sees no new names.
    return (
        "(lambda __td: (exec(" + repr(code) + ", __td), __td['__td_out'])[1])"
        "({'ns': locals(), 'fg': globals()})"
    )


_EXPRESSIONS = {name: _expression(body) for name, (body, _) in _PROBES.items()}


def probe_expressions() -> list[dict[str, str]]:
    """The probes a DAP client evaluates (`context: "watch"`, deepest user frame)."""
    return [{"name": name, "expression": _EXPRESSIONS[name], "when": when} for name, (_, when) in _PROBES.items()]


def probe_names() -> tuple[str, ...]:
    return tuple(_PROBES)


def parse_result(result: str) -> Any:
    """Decode an evaluate `result`: debugpy shows the returned str as its repr."""
    text = result.strip()
    if text[:1] in ("'", '"'):
        try:
            text = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise ValueError("probe output was truncated or is not a string") from None
    if not isinstance(text, str):
        raise ValueError("probe did not return a string")
    return json.loads(text)
