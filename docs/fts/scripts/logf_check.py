"""Is glibc logf (what pylance's f32::ln uses) correctly rounded on BM25 idf arguments? Compare with
float32(math.log(x)) and with a 50-digit decimal logarithm rounded to float32."""
import ctypes, math, numpy as np
from decimal import Decimal, getcontext
getcontext().prec = 50
F = np.float32
libm = ctypes.CDLL("libm.so.6"); libm.logf.restype = ctypes.c_float; libm.logf.argtypes = [ctypes.c_float]
def correct(a):  # correctly rounded float32 of ln(a)
    d = Decimal(float(a)).ln()
    c = F(float(d))              # nearest double then to f32; fix double rounding by checking neighbours
    cands = [np.nextafter(c, F(-1e30)), c, np.nextafter(c, F(1e30))]
    return min(cands, key=lambda v: abs(Decimal(float(v)) - d))
stats = {"libm!=correct": 0, "f32(math.log)!=correct": 0, "total": 0}
for N in (5, 3000, 6000, 1500, 100000):
    for n in range(1, min(N, 20000) + 1):
        a = F(1) + (F(N) - F(n) + F(0.5)) / (F(n) + F(0.5)); stats["total"] += 1
        l, m = F(libm.logf(float(a))), F(math.log(float(a)))
        if l != m:
            c = correct(a)
            stats["libm!=correct"] += l != c; stats["f32(math.log)!=correct"] += m != c
print(stats)
