package org.lancelet.spark;

import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A lance table as one DataFrame sees it: Spark's Python table for writes (batch
 * writes through {@link SizedWrites}) and streams, and a scan builder that plans each
 * batch query's read itself.
 *
 * <p>The Python source is created once per table (it fixes the dataset version the
 * DataFrame reads), and every query's read is planned from it.
 */
final class BridgeTable implements SupportsRead, SupportsWrite {
  private final LanceSource source;
  private final PythonTable plain;
  private final StructType schema;
  private final ReadPlan plans;

  BridgeTable(LanceSource source, PythonTable plain, StructType schema,
      CaseInsensitiveStringMap options, Long rows) {
    this.source = source;
    this.plain = plain;
    this.schema = schema;
    this.plans = new ReadPlan(source, schema, options, rows);
  }

  @Override
  public String name() {
    return "lance";
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Transform[] partitioning() {
    return plain.partitioning();
  }

  @Override
  public Map<String, String> properties() {
    return plain.properties();
  }

  @Override
  public Set<TableCapability> capabilities() {
    return plain.capabilities();
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap scanOptions) {
    return new BridgeScanBuilder(source, schema, plans);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return SizedWrites.builder(plain.newWriteBuilder(info));
  }
}
