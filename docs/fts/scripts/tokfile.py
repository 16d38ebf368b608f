import glob, sys
sys.path.insert(0, "/tmp/fts-research/scripts")
from lancelet.file.reader import LanceFileReader
def fst_bytes(idxdir, part=0):
    r = LanceFileReader(f"{idxdir}/part_{part}_tokens.lance")
    return r.read_all().to_table()["_token_fst_bytes"][0].as_py()
def idxdir(uri):
    return glob.glob(uri + "/_indices/*/")[0].rstrip("/")
