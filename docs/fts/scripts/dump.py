import sys, os, glob
from lancelet.file.reader import LanceFileReader
d = sys.argv[1]
maxrows = int(sys.argv[2]) if len(sys.argv) > 2 else 50
for p in sorted(glob.glob(d + "/*")):
    print("=" * 20, os.path.basename(p), os.path.getsize(p))
    r = LanceFileReader(p)
    m = r.metadata()
    print(m.schema)
    for k in dir(m):
        if not k.startswith("_"): 
            try: v = getattr(m, k)
            except Exception as e: v = e
            if k != "schema": print("  meta.", k, repr(v)[:300])
    t = r.read_all().to_table()
    print(t.schema)
    print(t.slice(0, maxrows).to_pydict() if t.num_rows else "(0 rows)")
    i = 0
    while True:
        try:
            b = r.read_global_buffer(i)
        except Exception as e:
            print("gb", i, "->", type(e).__name__, e); break
        print("gb", i, len(b), bytes(b[:200]))
        i += 1
