package org.lancelet.spark;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.WriteSummary;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.internal.SQLConf;

/**
 * Batch writes of Spark's Python table, with one change: a task whose rows are small
 * sends them to the Python writer without Spark's per-row batch size check.
 *
 * <p>Spark's Arrow input to Python workers cuts batches at
 * {@code spark.sql.execution.arrow.maxRecordsPerBatch} rows or
 * {@code spark.sql.execution.arrow.maxBytesPerBatch} bytes, and checks the bytes by
 * summing every column's buffers after every row; on TPC-H lineitem that check is
 * about 40% of the JVM's time of a write.  Spark skips it when the byte limit is
 * {@code Integer.MAX_VALUE}, a setting the runner reads from the task's SQL settings
 * when the task builds it.  So each task looks at its first rows: when the widest of
 * them, times the record limit, stays under an eighth of the byte limit, the task
 * sets the byte limit to the maximum for itself (its own copy of the session's
 * settings), and its batches are cut by record count alone.  A session that set the
 * byte limit itself, rows that are not Spark's {@code UnsafeRow}, or wide rows keep
 * Spark's check; so do streaming writes.
 */
public final class SizedWrites {
  static final String MAX_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch";
  private static final int SAMPLED_ROWS = 1000;
  // Later rows of a task may be wider than its first ones: the widest sampled row
  // must fit eight times over before batches go by record count alone.
  private static final long HEADROOM = 8;

  private SizedWrites() {}

  /** Whether a task whose sampled rows are at most {@code widest} bytes may send its
   * batches by record count alone, under these limits. */
  public static boolean bySizeAlone(long widest, long maxBytes, int maxRecords) {
    if (maxRecords <= 0 || maxBytes <= 0 || maxBytes >= Integer.MAX_VALUE) {
      return false;  // no record bound, or no byte check to skip
    }
    return widest <= maxBytes / HEADROOM / maxRecords;
  }

  static WriteBuilder builder(WriteBuilder plain) {
    return plain instanceof SupportsTruncate
        ? new TruncatingBuilder((SupportsTruncate) plain) : new Builder(plain);
  }

  private static class Builder implements WriteBuilder {
    final WriteBuilder plain;

    Builder(WriteBuilder plain) {
      this.plain = plain;
    }

    @Override
    public Write build() {
      return new SizedWrite(plain.build());
    }
  }

  private static final class TruncatingBuilder extends Builder implements SupportsTruncate {
    TruncatingBuilder(SupportsTruncate plain) {
      super(plain);
    }

    @Override
    public WriteBuilder truncate() {
      return builder(((SupportsTruncate) plain).truncate());
    }
  }

  private static final class SizedWrite implements Write {
    private final Write plain;

    SizedWrite(Write plain) {
      this.plain = plain;
    }

    @Override
    public String description() {
      return plain.description();
    }

    @Override
    public BatchWrite toBatch() {
      return new SizedBatchWrite(plain.toBatch());
    }

    @Override
    public StreamingWrite toStreaming() {
      return plain.toStreaming();
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
      return plain.supportedCustomMetrics();
    }

    @Override
    public CustomTaskMetric[] reportDriverMetrics() {
      return plain.reportDriverMetrics();
    }
  }

  private static final class SizedBatchWrite implements BatchWrite {
    private final BatchWrite plain;

    SizedBatchWrite(BatchWrite plain) {
      this.plain = plain;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      return new WriterFactory(plain.createBatchWriterFactory(info));
    }

    @Override
    public boolean useCommitCoordinator() {
      return plain.useCommitCoordinator();
    }

    @Override
    public void onDataWriterCommit(WriterCommitMessage message) {
      plain.onDataWriterCommit(message);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
      plain.commit(messages);
    }

    @Override
    public void commit(WriterCommitMessage[] messages, WriteSummary summary) {
      plain.commit(messages, summary);
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
      plain.abort(messages);
    }
  }

  private static final class WriterFactory implements DataWriterFactory, Serializable {
    private static final long serialVersionUID = 1L;
    private final DataWriterFactory plain;

    WriterFactory(DataWriterFactory plain) {
      this.plain = plain;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
      return new SizedWriter(plain.createWriter(partitionId, taskId));
    }
  }

  private static final class SizedWriter implements DataWriter<InternalRow> {
    private final DataWriter<InternalRow> plain;

    SizedWriter(DataWriter<InternalRow> plain) {
      this.plain = plain;
    }

    @Override
    public void writeAll(Iterator<InternalRow> rows) throws IOException {
      plain.writeAll(sampled(rows));
    }

    @Override
    public void write(InternalRow row) throws IOException {
      plain.write(row);
    }

    @Override
    public void write(InternalRow metadata, InternalRow row) throws IOException {
      plain.write(metadata, row);
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
      return plain.commit();
    }

    @Override
    public void abort() throws IOException {
      plain.abort();
    }

    @Override
    public void close() throws IOException {
      plain.close();
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
      return plain.currentMetricsValues();
    }
  }

  /** The task's rows, unchanged; on the way, the first ones decide the byte check. */
  private static Iterator<InternalRow> sampled(Iterator<InternalRow> rows) {
    TaskContext task = TaskContext.get();
    if (task == null || task.getLocalProperty(MAX_BYTES) != null) {
      return rows;  // not in a task, or the session chose its byte limit
    }
    long maxBytes;
    int maxRecords;
    try {
      SQLConf conf = SQLConf.get();
      maxBytes = conf.arrowMaxBytesPerBatch();
      maxRecords = conf.arrowMaxRecordsPerBatch();
    } catch (LinkageError e) {
      return rows;  // another Spark: its settings moved, keep its behaviour
    }
    List<InternalRow> head = new ArrayList<>();
    long widest = 0;
    while (head.size() < SAMPLED_ROWS && rows.hasNext()) {
      InternalRow row = rows.next();
      head.add(row.copy());  // Spark reuses the row object it hands out
      if (!(row instanceof UnsafeRow)) {
        widest = Long.MAX_VALUE;
        break;
      }
      widest = Math.max(widest, ((UnsafeRow) row).getSizeInBytes());
    }
    if (bySizeAlone(widest, maxBytes, maxRecords)) {
      task.getLocalProperties().setProperty(MAX_BYTES, String.valueOf(Integer.MAX_VALUE));
    }
    return new Chained(head.iterator(), rows);
  }

  private static final class Chained implements Iterator<InternalRow> {
    private final Iterator<InternalRow> first;
    private final Iterator<InternalRow> rest;

    Chained(Iterator<InternalRow> first, Iterator<InternalRow> rest) {
      this.first = first;
      this.rest = rest;
    }

    @Override
    public boolean hasNext() {
      return first.hasNext() || rest.hasNext();
    }

    @Override
    public InternalRow next() {
      if (first.hasNext()) {
        return first.next();
      }
      if (!rest.hasNext()) {
        throw new NoSuchElementException();
      }
      return rest.next();
    }
  }
}
