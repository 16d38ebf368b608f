import sys; sys.path.insert(0, "/tmp/fts-research/scripts")
import fstdec, tokfile, struct
def crc32c(data):
    crc = 0xFFFFFFFF
    for x in data:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF
for uri in sys.argv[1:]:
    b = tokfile.fst_bytes(tokfile.idxdir(uri))
    h = fstdec.parse(b)
    it = fstdec.items(b)
    keys = [k for k, _ in it]
    print(uri, h["len"], len(it), "sorted:", keys == sorted(keys), "ids perm:", sorted(v for _, v in it) == list(range(len(it))))
    print("  crc32c(data[:-4]) =", hex(crc32c(b[:-4])), "stored", hex(struct.unpack("<I", b[-4:])[0]))
    print("  first items:", [(k.decode(), v) for k, v in it[:12]])
    miss = [k for k, v in it[:200] if fstdec.lookup(b, k) != v]; print("  lookup mismatches", miss)
