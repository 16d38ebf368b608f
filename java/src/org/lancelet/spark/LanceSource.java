package org.lancelet.spark;

import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The {@code lance} format on the JVM: Spark's own Python data source provider, pointed
 * at lancelet's Python source (registered as {@value #PYTHON_NAME}), whose reads are
 * planned per query with the columns, filters, limit and count the query needs.
 *
 * <p>Writes, streams and schema inference are Spark's Python data source path unchanged.
 * Where this Spark lacks the internals the planning uses ({@link Internals}), tables are
 * Spark's plain Python tables, and the reason is logged once.
 */
public class LanceSource extends PythonDataSourceV2 implements DataSourceRegister {
  /** The name lancelet registers its Python source under for this bridge. */
  public static final String PYTHON_NAME = "lancelet_python";

  private boolean named;
  // The live rows the Python source counted when it inferred the schema, at the
  // version it fixed for the table, and the options it was inferred with.
  private Long inferredRows;
  private CaseInsensitiveStringMap inferredWith;

  /** The Spark internals the bridge needs and this Spark lacks (empty: it runs). */
  public static String[] missingInternals() {
    return Internals.missing().toArray(new String[0]);
  }

  /** The Spark internals columnar reads need and this Spark lacks (empty: they run). */
  public static String[] missingColumnarInternals() {
    return Internals.missingColumnar().toArray(new String[0]);
  }

  /** Whether a read of {@code schema} in the active session comes as columnar batches. */
  public static boolean readsColumnar(StructType schema) {
    return ArrowBatchReaderFactory.columnar(org.apache.spark.sql.internal.SQLConf.get(), schema);
  }

  @Override
  public String shortName() {
    return "lance";
  }

  /** Spark names the provider by the format it was looked up with; the Python source
   * behind it keeps its own name. */
  @Override
  public synchronized void setShortName(String ignored) {
    if (!named) {
      super.setShortName(PYTHON_NAME);
      named = true;
    }
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    setShortName(PYTHON_NAME);
    StructType inferred = super.inferSchema(options);
    inferredRows = ReadPlan.rowsOf(inferred);
    inferredWith = options;
    return ReadPlan.withoutRows(inferred);
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    setShortName(PYTHON_NAME);
    Table plain = super.getTable(schema, partitioning, properties);
    if (!Internals.available() || !(plain instanceof PythonTable)) {
      return plain;
    }
    CaseInsensitiveStringMap options = new CaseInsensitiveStringMap(properties);
    Long rows = options.equals(inferredWith) ? inferredRows : null;
    return new BridgeTable(this, (PythonTable) plain, schema, options, rows);
  }
}
