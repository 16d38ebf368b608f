package org.lancelet.spark;

import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.util.TransferPair;
import org.apache.spark.TaskContext;
import org.apache.spark.api.python.ChainedPythonFunctions;
import org.apache.spark.api.python.PythonEvalType;
import org.apache.spark.api.python.PythonFunction;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.datasources.v2.python.PythonCustomMetric;
import org.apache.spark.sql.execution.datasources.v2.python.PythonInputPartition;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.python.ArrowPythonRunner;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

import scala.Tuple2;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One partition of a lance read as columnar batches: the Python worker run as Spark's
 * {@code PythonPartitionReaderFactory} runs it (the same pickled read function, eval
 * type and Arrow stream), but each Arrow batch it sends is handed to Spark as is,
 * whereas Spark's own reader copies it into rows one by one.
 */
final class ArrowBatchReader implements PartitionReader<ColumnarBatch> {
  private final UserDefinedPythonDataSource source;
  private final int width;
  private final int limit;
  private final Map<String, SQLMetric> metrics = PythonCustomMetric.pythonMetrics();
  private final Iterator<ColumnarBatch> batches;
  private ColumnarBatch current;
  private long rows;
  // The last batch of a limited read, moved out of the runner's vectors (see next()).
  private BufferAllocator allocator;
  private ValueVector owned;

  ArrowBatchReader(ArrowBatchReaderFactory plan, PythonInputPartition partition) {
    this.source = plan.source;
    this.width = plan.output.fields().length;
    this.limit = plan.limit;
    ArrowPythonRunner runner = new ArrowPythonRunner(functions(plan),
        PythonEvalType.SQL_MAP_ARROW_ITER_UDF(), new int[][] {{0}}, inputSchema(),
        plan.timeZone, plan.largeVarTypes, plan.runnerConf, metrics, plan.jobArtifactUuid,
        plan.sessionUuid);
    TaskContext context = TaskContext.get();
    batches = runner.compute(input(partition), context.partitionId(), context);
  }

  private static scala.collection.immutable.Seq<Tuple2<ChainedPythonFunctions, Object>> functions(
      ArrowBatchReaderFactory plan) {
    PythonFunction read = plan.source.createPythonFunction(plan.pickledReadFunc);
    ChainedPythonFunctions chained = new ChainedPythonFunctions(
        CollectionConverters.asScala(List.of(read)).toList());
    // The id Spark's own reader gives the read (a fresh expression id) keys its
    // profiler results; any unique id will do.
    Object resultId = NamedExpression$.MODULE$.newExprId().id();
    return CollectionConverters.asScala(List.of(new Tuple2<>(chained, resultId))).toList();
  }

  /** The worker's input, as Spark's reader wraps it: one row holding the partition. */
  private static StructType inputSchema() {
    return new StructType().add("struct", UserDefinedPythonDataSource.readInputSchema());
  }

  private static Iterator<Iterator<InternalRow>> input(PythonInputPartition partition) {
    InternalRow pickled = new GenericInternalRow(new Object[] {partition.pickedPartition()});
    InternalRow wrapped = new GenericInternalRow(new Object[] {pickled});
    Iterator<InternalRow> rows = CollectionConverters.asScala(List.of(wrapped).iterator());
    return CollectionConverters.asScala(List.of(rows).iterator());
  }

  @Override
  public boolean next() {
    freeOwned();
    if (!batches.hasNext()) {
      return false;
    }
    // The worker's batch is one struct column (a map-in-Arrow function's result); its
    // children are the read's columns.  They stay valid until the next batch loads.
    ColumnarBatch batch = batches.next();
    ArrowColumnVector struct = (ArrowColumnVector) batch.column(0);
    rows += batch.numRows();
    if (limit >= 0 && rows >= limit) {
      struct = finishLimited(struct);
    }
    ArrowColumnVector[] columns = new ArrowColumnVector[width];
    for (int i = 0; i < width; i++) {
      columns[i] = struct.getChild(i);
    }
    current = new Borrowed(columns, batch.numRows());
    return true;
  }

  /**
   * The last batch of a read the limit bounds (the Python reader sends at most the
   * limit's rows), its buffers moved to this reader, then the worker's stream read to
   * its end.  Spark stops reading once a limit is met ({@code show()}, {@code take}),
   * and the runner kills a worker whose stream was not read to the end: the next task
   * would pay for a new one (a fork, then importing lancelet: about a second).  Reading
   * the end frees the runner's vectors, hence the move (no copy).  Should the worker
   * send more, that batch is loaded and handed out by the next call, as any other.
   */
  private ArrowColumnVector finishLimited(ArrowColumnVector struct) {
    if (allocator == null) {
      allocator = ArrowUtils.rootAllocator().newChildAllocator(
          "lancelet limited read", 0, Long.MAX_VALUE);
    }
    TransferPair moved = struct.getValueVector().getTransferPair(allocator);
    moved.transfer();
    owned = moved.getTo();
    batches.hasNext();
    return new ArrowColumnVector(owned);
  }

  private void freeOwned() {
    if (owned != null) {
      owned.close();
      owned = null;
    }
  }

  /**
   * A batch whose vectors the runner owns: it loads each next batch into them and frees
   * them when the task ends.  Spark closes a batch it has consumed ("if freeable"),
   * which would drop a struct vector's children before the runner's next load.
   */
  private static final class Borrowed extends ColumnarBatch {
    Borrowed(ArrowColumnVector[] columns, int rows) {
      super(columns, rows);
    }

    @Override
    public void closeIfFreeable() {}

    @Override
    public void close() {}
  }

  @Override
  public ColumnarBatch get() {
    return current;
  }

  @Override
  public CustomTaskMetric[] currentMetricsValues() {
    java.util.Map<String, Object> values = new java.util.HashMap<>();
    CollectionConverters.asJava(metrics).forEach((name, metric) -> values.put(name, metric.value()));
    return source.createPythonTaskMetrics(scala.collection.immutable.Map$.MODULE$.from(
        CollectionConverters.asScala(values)));
  }

  /** The runner frees its Arrow buffers and worker when the task completes. */
  @Override
  public void close() {
    freeOwned();
    if (allocator != null) {
      allocator.close();
      allocator = null;
    }
  }
}
