package org.lancelet.spark;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Spark internals the bridge plans reads with, checked once by reflection: Spark
 * marks them internal, so another Spark version may move them.  When one is missing,
 * the bridge steps aside (Spark's plain Python source path) and says why, once; when
 * one only columnar reads use is missing, reads come as rows, said once too.
 */
final class Internals {
  private static final Logger LOG = LoggerFactory.getLogger(LanceSource.class);
  private static final String PACKAGE = "org.apache.spark.sql.execution.datasources.v2.python.";
  private static final String[][] METHODS = {
    {"PythonDataSourceV2", "source"},
    {"PythonDataSourceV2", "getOrCreateDataSourceInPython"},
    {"UserDefinedPythonDataSource", "createReadInfoInPython"},
    {"UserDefinedPythonDataSource", "pushdownFiltersInPython"},
    {"UserDefinedPythonDataSource", "createPythonMetrics"},
    {"PythonDataSourceReadInfo", "func"},
    {"PythonDataSourceReadInfo", "partitions"},
    {"PythonFilterPushdownResult", "readInfo"},
    {"PythonFilterPushdownResult", "isFilterPushed"},
    {"PythonScan", "toMicroBatchStream"},
  };
  private static final String[] CONSTRUCTED = {
    "PythonInputPartition", "PythonPartitionReaderFactory", "PythonScan",
  };
  private static final String SQL = "org.apache.spark.sql.";
  // What columnar reads ({@link ArrowBatchReader}) use besides: Spark's Arrow runner of
  // Python workers, built as Spark's own Python partition reader builds it.  Missing,
  // reads come as rows and the bridge still plans them.
  private static final String[][] COLUMNAR_METHODS = {
    {SQL + "execution.python.ArrowPythonRunner", "getPythonRunnerConfMap"},
    {SQL + "execution.python.ArrowPythonRunner", "compute"},
    {PACKAGE + "UserDefinedPythonDataSource", "createPythonFunction"},
    {PACKAGE + "UserDefinedPythonDataSource", "createPythonTaskMetrics"},
    {PACKAGE + "UserDefinedPythonDataSource", "readInputSchema"},
    {PACKAGE + "PythonCustomMetric", "pythonMetrics"},
    {PACKAGE + "PythonInputPartition", "pickedPartition"},
    {"org.apache.spark.api.python.PythonEvalType", "SQL_MAP_ARROW_ITER_UDF"},
    {SQL + "vectorized.ArrowColumnVector", "getChild"},
    {SQL + "catalyst.expressions.NamedExpression$", "newExprId"},
  };
  private static final Class<?>[] RUNNER_ARGUMENTS = {
    scala.collection.immutable.Seq.class, int.class, int[][].class,
    org.apache.spark.sql.types.StructType.class, String.class, boolean.class,
    scala.collection.immutable.Map.class, scala.collection.immutable.Map.class,
    scala.Option.class, scala.Option.class,
  };
  private static volatile Boolean available;
  private static volatile Boolean columnar;

  private Internals() {}

  /** Whether every internal the bridge calls exists in this Spark. */
  static boolean available() {
    if (available == null) {
      synchronized (Internals.class) {
        if (available == null) {
          List<String> missing = missing();
          if (!missing.isEmpty()) {
            LOG.warn("lancelet: the lance source plans reads as a plain Python data source "
                + "(no column pruning or pushdown) because this Spark lacks " + missing);
          }
          available = missing.isEmpty();
        }
      }
    }
    return available;
  }

  /** Whether columnar reads can run in this Spark (else reads come as rows). */
  static boolean columnar() {
    if (columnar == null) {
      synchronized (Internals.class) {
        if (columnar == null) {
          List<String> missing = missingColumnar();
          if (!missing.isEmpty()) {
            LOG.warn("lancelet: lance reads reach Spark as rows, not columnar batches, "
                + "because this Spark lacks " + missing);
          }
          columnar = missing.isEmpty();
        }
      }
    }
    return columnar;
  }

  /** The internals columnar reads use and this Spark lacks; empty when they can run. */
  static List<String> missingColumnar() {
    List<String> out = new ArrayList<>();
    for (String[] method : COLUMNAR_METHODS) {
      if (!hasMethod(method[0], method[1])) {
        out.add(method[0] + "." + method[1]);
      }
    }
    String runner = COLUMNAR_METHODS[0][0];
    try {
      Class.forName(runner).getConstructor(RUNNER_ARGUMENTS);
    } catch (ClassNotFoundException | NoSuchMethodException | LinkageError e) {
      out.add(runner + ".<init>");
    }
    return out;
  }

  /** The internals this Spark lacks, named; empty when the bridge can run. */
  static List<String> missing() {
    List<String> out = new ArrayList<>();
    for (String[] method : METHODS) {
      if (!hasMethod(PACKAGE + method[0], method[1])) {
        out.add(method[0] + "." + method[1]);
      }
    }
    for (String name : CONSTRUCTED) {
      try {
        if (Class.forName(PACKAGE + name).getConstructors().length == 0) {
          out.add(name + ".<init>");
        }
      } catch (ClassNotFoundException | LinkageError e) {
        out.add(name);
      }
    }
    return out;
  }

  private static boolean hasMethod(String className, String method) {
    try {
      for (Method m : Class.forName(className).getMethods()) {
        if (m.getName().equals(method)) {
          return true;
        }
      }
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
    return false;
  }
}
