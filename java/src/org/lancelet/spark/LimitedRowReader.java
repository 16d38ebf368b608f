package org.lancelet.spark;

import java.io.IOException;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;

/**
 * Spark's own row reader of a limited read, read on to the end of the Python worker's
 * stream once the limit's rows have come, as {@link ArrowBatchReader} does for
 * columnar reads: the worker then goes back to Spark's pool instead of being killed.
 * The limit's last row is copied first (reading the end frees the vectors behind it).
 * Should the worker send more rows, they are handed out as usual.
 */
final class LimitedRowReader implements PartitionReader<InternalRow> {
  private final PartitionReader<InternalRow> rows;
  private final int limit;
  private long seen;
  private InternalRow current;
  private InternalRow pending;

  LimitedRowReader(PartitionReader<InternalRow> rows, int limit) {
    this.rows = rows;
    this.limit = limit;
  }

  @Override
  public boolean next() throws IOException {
    if (pending != null) {
      current = pending;
      pending = null;
      return true;
    }
    if (!rows.next()) {
      return false;
    }
    // Spark's reader moves on in get(): one get() per next().
    current = rows.get();
    if (++seen == limit) {
      current = current.copy();
      if (rows.next()) {
        pending = rows.get().copy();
      }
    }
    return true;
  }

  @Override
  public InternalRow get() {
    return current;
  }

  @Override
  public CustomTaskMetric[] currentMetricsValues() {
    return rows.currentMetricsValues();
  }

  @Override
  public void close() throws IOException {
    rows.close();
  }
}
