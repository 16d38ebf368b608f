"""Minimal reader for the FST map stored in part_N_tokens.lance (_token_fst_bytes).
Layout established by experiment on pylance 14.0.2 output (see inverted-index-format.md).
COMMON is filled in from scripts/common_inputs.json (measured by scripts/fst_common.py)."""
import json, os, struct
_here = os.path.dirname(os.path.abspath(__file__))
COMMON = {}
_p = os.path.join(_here, "common_inputs.json")
if os.path.exists(_p):
    COMMON = {int(k): v for k, v in json.load(open(_p)).items()}   # idx -> byte value

def u(b, lo, n):  # little-endian unsigned of n bytes
    return int.from_bytes(b[lo:lo + n], "little") if n else 0

class Node:
    """A node: addr = position of its state byte; end = lowest byte position of the node."""
    def __init__(self, b, addr, learn=None):
        self.addr = addr
        if addr == 0:            # the empty final node: no bytes
            self.final, self.final_out, self.trans = True, 0, []
            self.kind = "empty"; return
        s = b[addr]
        top = s >> 6
        if top == 3:   # one transition to the previously written node, no output
            idx = s & 0x3F
            if idx: inp = COMMON.get(idx, ("?", idx)); size = 1
            else: inp = b[addr - 1]; size = 2
            self.end = addr - size + 1
            self.kind = "one_next"; self.final = False; self.final_out = 0
            self.trans = [(inp, 0, self.end - 1)]
        elif top == 2:  # one transition, explicit target + output
            idx = s & 0x3F
            p = addr - 1
            if idx: inp = COMMON.get(idx, ("?", idx))
            else: inp = b[p]; p -= 1
            pack = b[p]; tsize, osize = pack >> 4, pack & 15
            p -= tsize; delta = u(b, p, tsize)
            p -= osize; out = u(b, p, osize)
            self.end = p
            tgt = 0 if delta == 0 else self.end - delta
            self.kind = "one"; self.final = False; self.final_out = 0
            self.trans = [(inp, out, tgt)]
        else:          # any number of transitions
            final = bool(s & 0x40)
            n = s & 0x3F; p = addr - 1
            if n == 0:
                n = b[p]; p -= 1
                if n == 1: n = 256
            pack = b[p]; p -= 1; tsize, osize = pack >> 4, pack & 15
            if n > 32:                  # 256-byte index just below the pack byte:
                p -= 255                # byte at [p + v] = transition number for input v (255: none)
                self.index = b[p:p + 256]; p -= 1
            inputs_hi = p
            p -= n - 1                  # inputs occupy [p, inputs_hi], transition 0 highest
            inputs = [b[inputs_hi - i] for i in range(n)]
            addr_hi = p - 1
            p -= n * tsize
            addrs = [u(b, addr_hi - (i + 1) * tsize + 1, tsize) for i in range(n)]
            out_hi = p - 1
            p -= n * osize
            outs = [u(b, out_hi - (i + 1) * osize + 1, osize) for i in range(n)]
            fo = 0
            if final and osize:
                p -= osize; fo = u(b, p, osize)
            self.end = p
            self.kind = "any"; self.final = final; self.final_out = fo
            self.trans = [(inputs[i], outs[i], 0 if addrs[i] == 0 else self.end - addrs[i]) for i in range(n)]

def parse(b):
    version, ftype = struct.unpack_from("<QQ", b, 0)
    # footer: (version>=3) u32 crc32c checksum at the very end; before it: u64 len, u64 root
    nkeys, root = struct.unpack_from("<QQ", b, len(b) - 20)
    return dict(version=version, type=ftype, len=nkeys, root=root, checksum=b[-4:])

def items(b):
    h = parse(b); out = []
    def walk(addr, prefix, acc):
        n = Node(b, addr)
        if n.final: out.append((bytes(prefix), acc + n.final_out))
        for inp, o, t in n.trans:
            walk(t, prefix + [inp if isinstance(inp, int) else 63], acc + o)
    walk(h["root"], [], 0)
    return out

def lookup(b, key: bytes):
    addr = parse(b)["root"]; acc = 0
    for c in key:
        n = Node(b, addr)
        for inp, o, t in n.trans:
            if inp == c: acc += o; addr = t; break
        else: return None
    n = Node(b, addr)
    return acc + n.final_out if n.final else None
