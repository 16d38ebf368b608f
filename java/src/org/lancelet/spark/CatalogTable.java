package org.lancelet.spark;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A lance catalog table: the table the {@code lance} source makes for its location
 * (planned reads through the bridge, the Python source's writes), under the catalog's
 * name.  Row-level SQL (DELETE, UPDATE, MERGE) is refused here, where Spark asks for it,
 * with a pointer to {@code LanceTable}, which runs them as Spark jobs from Python.
 */
final class CatalogTable implements SupportsRead, SupportsWrite, SupportsRowLevelOperations {
  private final String name;
  private final Table table;
  private final Map<String, String> options;

  /** {@code options}: what the source was given (the path, storage options, a version). */
  CatalogTable(String name, Table table, Map<String, String> options) {
    this.name = name;
    this.table = table;
    this.options = options;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return table.schema();
  }

  @Override
  public Transform[] partitioning() {
    return new Transform[0];
  }

  @Override
  public Map<String, String> properties() {
    Map<String, String> out = new HashMap<>();
    out.put(TableCatalog.PROP_PROVIDER, "lance");
    out.put(TableCatalog.PROP_LOCATION, options.get("path"));
    if (options.containsKey("version")) {
      out.put("version", options.get("version"));
    }
    return out;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return table.capabilities();
  }

  /** The read is fixed when the table is loaded: options per scan would be ignored. */
  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap scanOptions) {
    if (!scanOptions.isEmpty()) {
      throw new UnsupportedOperationException("lancelet: read options on a lance catalog table "
          + "are not supported (got " + scanOptions.keySet() + "); use VERSION AS OF, or "
          + "spark.read.format(\"lance\").option(...).load(path)");
    }
    return ((SupportsRead) table).newScanBuilder(scanOptions);
  }

  /** The write goes to the table's dataset, with the write's own options (checked by the
   * Python source) over the table's. */
  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    Map<String, String> merged = new HashMap<>(options);
    for (Map.Entry<String, String> option : info.options().entrySet()) {
      String key = option.getKey().toLowerCase(Locale.ROOT);
      if (key.equals("path") || key.equals("version")) {
        throw new UnsupportedOperationException("lancelet: a write to the lance catalog table "
            + name + " cannot set the option " + option.getKey());
      }
      merged.put(option.getKey(), option.getValue());
    }
    return ((SupportsWrite) table).newWriteBuilder(withOptions(info, merged));
  }

  private static LogicalWriteInfo withOptions(LogicalWriteInfo info, Map<String, String> options) {
    CaseInsensitiveStringMap merged = new CaseInsensitiveStringMap(options);
    return new LogicalWriteInfo() {
      @Override
      public CaseInsensitiveStringMap options() {
        return merged;
      }

      @Override
      public String queryId() {
        return info.queryId();
      }

      @Override
      public StructType schema() {
        return info.schema();
      }

      @Override
      public Optional<StructType> rowIdSchema() {
        return info.rowIdSchema();
      }

      @Override
      public Optional<StructType> metadataSchema() {
        return info.metadataSchema();
      }
    };
  }

  @Override
  public RowLevelOperationBuilder newRowLevelOperationBuilder(RowLevelOperationInfo info) {
    String command = info.command().name();
    throw new UnsupportedOperationException("lancelet: " + command + " on the lance table "
        + name + " is not supported in SQL; use lancelet.spark.LanceTable.forPath(spark, \""
        + options.get("path") + "\")." + command.toLowerCase(Locale.ROOT) + "(...) from Python");
  }
}
