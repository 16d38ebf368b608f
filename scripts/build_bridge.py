"""Build the Spark bridge jar (``java/``) against the installed pyspark's jars.

Writes ``src/lancelet/spark/jars/lancelet-spark-bridge.jar``, whose manifest records
the Spark version it was compiled against (``lancelet.spark.bridge`` loads it only
into that Spark).  Needs ``javac`` (JDK 17+); ``make`` runs it before the tests and
before building a wheel, so an installed wheel carries the jar and needs no compiler.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "java" / "src"
RESOURCES = ROOT / "java" / "resources"
JAR = ROOT / "src" / "lancelet" / "spark" / "jars" / "lancelet-spark-bridge.jar"


def main() -> int:
    try:
        import pyspark
    except ImportError:
        print("build_bridge: pyspark is not installed; no bridge jar built", file=sys.stderr)
        return 1
    javac = shutil.which("javac")
    if javac is None:
        print("build_bridge: javac (JDK 17+) not found; no bridge jar built", file=sys.stderr)
        return 1
    jars = Path(pyspark.__file__).parent / "jars"
    sources = sorted(str(p) for p in SOURCES.rglob("*.java"))
    with tempfile.TemporaryDirectory() as classes:
        # -classfile: Arrow's jars name nullness annotations Spark does not ship.
        command = [javac, "-Xlint:all,-path,-classfile", "-Werror", "--release", "17"]
        command += ["-cp", f"{jars}/*", "-d", classes, *sources]
        subprocess.run(command, check=True)
        _write_jar(Path(classes), pyspark.__version__)
    print(f"build_bridge: {JAR.relative_to(ROOT)} for Spark {pyspark.__version__}")
    return 0


def _write_jar(classes: Path, spark_version: str) -> None:
    manifest = (
        "Manifest-Version: 1.0\n"
        "Implementation-Title: lancelet-spark-bridge\n"
        f"Lancelet-Spark-Version: {spark_version}\n"
    )
    JAR.parent.mkdir(parents=True, exist_ok=True)
    partial = JAR.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
        jar.writestr("META-INF/MANIFEST.MF", manifest)
        for root in (classes, RESOURCES):
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    jar.write(path, path.relative_to(root).as_posix())
    partial.replace(JAR)


if __name__ == "__main__":
    sys.exit(main())
