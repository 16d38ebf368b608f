"""Measure the FST 'common input' table: build a whitespace-tokenized index whose tokens are
c + 'Q' + c for many characters c, then, walking each known key, read the 6-bit input index
in the state byte of single-transition nodes."""
import lance, pyarrow as pa, shutil, sys, json
sys.path.insert(0, "/tmp/fts-research/scripts")
import fstdec, tokfile
uri = "/tmp/fts-research/ds_common"
shutil.rmtree(uri, ignore_errors=True)
chars = [chr(i) for i in range(0, 0x800) if not chr(i).isspace() and not (0xd800 <= i < 0xe000)]
chars += [chr(i) for i in range(0x800, 0x10000, 0x1000 // 16)] + ["\U0001F600", "\U00100000"]
chars = [c for c in chars if not c.isspace() and c != "\x00" and not (0xd800 <= ord(c) < 0xe000)]
text = " ".join(c + "Q" + c for c in chars)
ds = lance.write_dataset(pa.table({"t": [text]}), uri)
ds.create_scalar_index("t", "INVERTED", base_tokenizer="whitespace", lower_case=False, stem=False,
                       remove_stop_words=False, ascii_folding=False, max_token_length=None)
b = tokfile.fst_bytes(tokfile.idxdir(uri))
h = fstdec.parse(b); print(h, "tokens expected", len(chars))
fstdec.COMMON = {}
table = {}
conflicts = 0
for c in chars + ["Q"]:
    key = (c + "Q" + c).encode()
    addr = h["root"]
    for ch in key:
        n = fstdec.Node(b, addr)
        s = b[addr] if addr else None
        if n.kind in ("one", "one_next") and s & 0x3F:
            idx = s & 0x3F
            if idx in table and table[idx] != ch: conflicts += 1
            table[idx] = ch
        nxt = None
        for inp, o, t in n.trans:
            if inp == ch or (isinstance(inp, tuple) and len(n.trans) == 1): nxt = t
        assert nxt is not None, (c, key, n.kind, n.trans)
        addr = nxt
print("conflicts", conflicts, "entries", len(table))
print(sorted(table.items()))
print("as string:", "".join(chr(table[i]) if i in table else "?" for i in range(1, 64)))
json.dump({str(k): v for k, v in sorted(table.items())}, open("/tmp/fts-research/scripts/common_inputs.json", "w"))
