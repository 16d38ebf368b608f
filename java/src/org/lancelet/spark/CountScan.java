package org.lancelet.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.types.StructType;

/**
 * A {@code COUNT(*)} the dataset's row counts answered while the query was planned:
 * Spark takes the one row as it is, no task reads anything.
 */
final class CountScan implements LocalScan {
  private final StructType schema;
  private final long rows;

  CountScan(StructType schema, long rows) {
    this.schema = schema;
    this.rows = rows;
  }

  @Override
  public InternalRow[] rows() {
    return new InternalRow[] {new GenericInternalRow(new Object[] {rows})};
  }

  @Override
  public StructType readSchema() {
    return schema;
  }

  @Override
  public String description() {
    return "lance count(*) from row counts: " + rows;
  }
}
