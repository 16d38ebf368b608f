import sys, glob, os
from lancelet.file.reader import LanceFileReader
for p in sorted(glob.glob(sys.argv[1] + "/*")):
    r = LanceFileReader(p); s = r.metadata().schema
    print(os.path.basename(p), {k.decode() if isinstance(k,bytes) else k: (v.decode() if isinstance(v,bytes) else v) for k,v in (s.metadata or {}).items()})
    for f in s: print("   field", f, f.metadata)
