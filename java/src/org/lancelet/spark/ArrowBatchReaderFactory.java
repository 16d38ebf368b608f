package org.lancelet.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.v2.python.PythonInputPartition;
import org.apache.spark.sql.execution.datasources.v2.python.PythonPartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource;
import org.apache.spark.sql.execution.python.ArrowPythonRunner;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DayTimeIntervalType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

import scala.Option;
import scala.collection.immutable.Map;

/**
 * A lance read's partition readers: columnar batches over the Arrow the Python worker
 * sends ({@link ArrowBatchReader}) when the read's types allow it and the session has
 * not turned them off, else Spark's own row reader.  The session settings are taken
 * here, on the driver, as Spark's own reader takes them when it plans the read.
 */
final class ArrowBatchReaderFactory implements PartitionReaderFactory {
  /** The session setting that turns columnar reads off ({@code false}). */
  static final String ENABLED = "spark.lancelet.bridge.columnar";
  private static final long serialVersionUID = 1L;

  final UserDefinedPythonDataSource source;
  final byte[] pickledReadFunc;
  final StructType output;
  /** Rows each partition stops at (the Python reader sends no more); -1: none. */
  final int limit;
  final String timeZone;
  final boolean largeVarTypes;
  final Map<String, String> runnerConf;
  final Option<String> jobArtifactUuid;
  final Option<String> sessionUuid;
  private final boolean columnar;
  private final PythonPartitionReaderFactory rows;

  ArrowBatchReaderFactory(UserDefinedPythonDataSource source, byte[] pickledReadFunc,
      StructType output, int limit, Option<String> jobArtifactUuid,
      Option<String> sessionUuid) {
    SQLConf conf = SQLConf.get();
    this.source = source;
    this.pickledReadFunc = pickledReadFunc;
    this.output = output;
    this.limit = limit;
    this.timeZone = conf.sessionLocalTimeZone();
    this.largeVarTypes = conf.arrowUseLargeVarTypes();
    this.columnar = columnar(conf, output);
    // Only called where it exists ({@link Internals#columnar}).
    this.runnerConf = columnar ? ArrowPythonRunner.getPythonRunnerConfMap(conf) : null;
    this.jobArtifactUuid = jobArtifactUuid;
    this.sessionUuid = sessionUuid;
    this.rows = new PythonPartitionReaderFactory(source, pickledReadFunc, output,
        jobArtifactUuid, sessionUuid);
  }

  /** Whether a read of {@code output} in this session comes as columnar batches. */
  static boolean columnar(SQLConf conf, StructType output) {
    return Boolean.parseBoolean(conf.getConfString(ENABLED, "true"))
        && holds(output) && Internals.columnar();
  }

  /**
   * Whether the type is one lancelet's reader sends (see {@code lancelet.spark.types}),
   * each held by Spark's {@code ArrowColumnVector} as the Python worker sends it and
   * tested so.  Others (user-defined types, variants, other intervals, ...) are read
   * as rows, which Spark converts value by value whatever the type.
   */
  static boolean holds(DataType type) {
    if (type instanceof StructType struct) {
      for (StructField field : struct.fields()) {
        if (!holds(field.dataType())) {
          return false;
        }
      }
      return true;
    }
    if (type instanceof ArrayType array) {
      return holds(array.elementType());
    }
    if (type instanceof MapType map) {
      return holds(map.keyType()) && holds(map.valueType());
    }
    return type instanceof NumericType || type instanceof BooleanType
        || type instanceof StringType || type instanceof BinaryType || type instanceof DateType
        || type instanceof TimestampType || type instanceof TimestampNTZType
        || type instanceof DayTimeIntervalType || type instanceof NullType;
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return columnar;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    PartitionReader<InternalRow> read = rows.createReader(partition);
    return limit >= 0 ? new LimitedRowReader(read, limit) : read;
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    return new ArrowBatchReader(this, (PythonInputPartition) partition);
  }
}
