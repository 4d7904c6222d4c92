"""A simulated timeline as Chrome trace-event JSON (Perfetto, chrome://tracing),
byte for byte what `slackswap simulate --timeline` writes (client/chrome_trace.h
describes the tracks, categories and arguments).

    response = client.simulate(trace, plan, budget_fraction=0.5, timeline=True)
    with open("step.json", "w") as f:
        f.write(chrome_trace_json(trace, response.timeline, response.metrics,
                                  "slackswap at 50%: gpt2-xl"))
"""

INT64_MAX = (1 << 63) - 1


def _quote(text):
    """JSON string as the C++ exporter writes it: '"', '\\', control
    characters escaped, everything else as it is."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif code < 0x20:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _micros(ns):
    return f"{ns // 1000}.{ns % 1000:03d}"


def process_id(process_name):
    """FNV-1a of the name's UTF-8 bytes, in [1, 2^31)."""
    h = 2166136261
    for byte in process_name.encode():
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return 1 + h % ((1 << 31) - 1)


def chrome_trace_json(trace, timeline, metrics, process_name):
    """The JSON text for `timeline` and `metrics` (a SimulateResponse's) of a
    simulation of `trace` (a slackswap.v1.Trace)."""
    from slackswap.v1 import simulation_pb2, trace_pb2
    pid = str(process_id(process_name))
    ops, tensors = trace.operators, trace.tensors

    def op_name(i):
        return ops[i].name if 0 <= i < len(ops) else f"op {i}"

    def tensor_name(i):
        return tensors[i].name if 0 <= i < len(tensors) else f"tensor {i}"

    def cause(c):
        return simulation_pb2.WaitCause.Name(c)[len("WAIT_CAUSE_"):].lower()

    out = ['{"displayTimeUnit":"ms","traceEvents":[\n',
           f'{{"ph":"M","pid":{pid},"name":"process_name","args":{{"name":'
           f'{_quote(process_name)}}}}},\n']
    for tid, name in enumerate(("compute", "D2H (offload)", "H2D (prefetch)"), start=1):
        out.append(f'{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_name",'
                   f'"args":{{"name":"{name}"}}}},\n')
    budgeted = 0 < metrics.budget_bytes < INT64_MAX
    if budgeted:
        out.append(f'{{"ph":"C","pid":{pid},"name":"budget_bytes","ts":0.000,'
                   f'"args":{{"bytes":{metrics.budget_bytes}}}}},\n')
    kinds = simulation_pb2.TimelineEventKind
    for e in timeline.events:
        tid, args = 1, None
        if e.kind == kinds.Value("TIMELINE_EVENT_KIND_OP"):
            name, category = op_name(e.index), "op"
            args = f'"index":{e.index}'
            if 0 <= e.index < len(ops):
                op = ops[e.index]
                args += (f',"kind":"{trace_pb2.OpKind.Name(op.kind)}"'
                         f',"phase":"{trace_pb2.Phase.Name(op.phase)}"')
        elif e.kind == kinds.Value("TIMELINE_EVENT_KIND_REBUILD"):
            name, category = "rebuild " + tensor_name(e.index), "rebuild"
        elif e.kind == kinds.Value("TIMELINE_EVENT_KIND_OFFLOAD"):
            name, category, tid = "offload " + tensor_name(e.index), "offload", 2
        elif e.kind == kinds.Value("TIMELINE_EVENT_KIND_PREFETCH"):
            name, category, tid = "prefetch " + tensor_name(e.index), "prefetch", 3
        elif e.kind == kinds.Value("TIMELINE_EVENT_KIND_FIXED_TRANSFER"):
            # The job's own traffic, on its direction's track.
            fixed = trace.fixed_transfers
            known = 0 <= e.index < len(fixed)
            x = fixed[e.index] if known else trace_pb2.FixedTransfer()
            name = "fixed " + (x.name if known else f"transfer {e.index}")
            category = "fixed"
            tid = 3 if x.direction == trace_pb2.DIRECTION_H2D else 2
            args = (f'"index":{e.index},"bytes":{x.size_bytes}'
                    f',"gpu_bytes":{x.gpu_bytes}')
        elif e.kind == kinds.Value("TIMELINE_EVENT_KIND_STALL"):
            name, category = "stall: " + cause(e.wait_cause), "stall"
            args = (f'"op":{e.index},"op_name":{_quote(op_name(e.index))}'
                    f',"cause":"{cause(e.wait_cause)}"')
        else:
            continue
        if args is None:
            size = tensors[e.index].size_bytes if 0 <= e.index < len(tensors) else 0
            args = f'"index":{e.index},"bytes":{size}'
        slowed = f',"slowed_ns":{e.slowed_ns}' if e.slowed_ns > 0 else ""
        out.append(f'{{"ph":"X","pid":{pid},"tid":{tid},"cat":"{category}","name":'
                   f'{_quote(name)},"ts":{_micros(e.start_ns)},'
                   f'"dur":{_micros(e.end_ns - e.start_ns)},"args":{{{args},'
                   f'"resident_bytes":{e.resident_bytes}{slowed}}}}},\n')
        out.append(f'{{"ph":"C","pid":{pid},"name":"resident_bytes","ts":'
                   f'{_micros(e.start_ns)},"args":{{"bytes":{e.resident_bytes}}}}},\n')
    if budgeted:
        out.append(f'{{"ph":"C","pid":{pid},"name":"budget_bytes","ts":'
                   f'{_micros(metrics.iteration_ns)},"args":{{"bytes":{metrics.budget_bytes}}}}},\n')
    out.append(f'{{"ph":"i","pid":{pid},"tid":1,"s":"g","name":"iteration end","ts":'
               f'{_micros(metrics.iteration_ns)}}}\n]}}\n')
    return "".join(out)
