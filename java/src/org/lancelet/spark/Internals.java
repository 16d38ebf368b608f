package org.lancelet.spark;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Spark internals the bridge plans reads with, checked once by reflection: Spark
 * marks them internal, so another Spark version may move them.  When one is missing,
 * the bridge steps aside (Spark's plain Python source path) and says why, once.
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
  private static volatile Boolean available;

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

  /** The internals this Spark lacks, named; empty when the bridge can run. */
  static List<String> missing() {
    List<String> out = new ArrayList<>();
    for (String[] method : METHODS) {
      if (!hasMethod(method[0], method[1])) {
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
      for (Method m : Class.forName(PACKAGE + className).getMethods()) {
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
