package org.lancelet.spark;

import java.util.List;

import org.apache.spark.JobArtifactSet$;
import org.apache.spark.JobArtifactState;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceReadInfo;
import org.apache.spark.sql.execution.datasources.v2.python.PythonInputPartition;
import org.apache.spark.sql.execution.datasources.v2.python.PythonScan;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One query's lance scan: planned in Python when Spark first asks for its partitions,
 * read through Spark's Python workers as columnar batches or, where those cannot
 * carry the read, by Spark's own Python partition readers.
 */
final class BridgeScan implements Scan, Batch {
  private final LanceSource source;
  private final StructType tableSchema;
  private final ReadPlan plans;
  private final StructType planned;
  private final Filter[] pushed;
  private final StructType output;
  private final Option<String> jobArtifactUuid;
  private final Option<String> sessionUuid;
  private PythonDataSourceReadInfo info;

  BridgeScan(LanceSource source, StructType tableSchema, ReadPlan plans, StructType planned,
      Filter[] pushed, StructType output) {
    this.source = source;
    this.tableSchema = tableSchema;
    this.plans = plans;
    this.planned = planned;
    this.pushed = pushed;
    this.output = output;
    Option<JobArtifactState> state = JobArtifactSet$.MODULE$.getCurrentJobArtifactState();
    this.jobArtifactUuid = state.isDefined() ? Option.apply(state.get().uuid()) : Option.empty();
    this.sessionUuid = activeSessionUuid();
  }

  private static Option<String> activeSessionUuid() {
    Option<?> active = org.apache.spark.sql.classic.SparkSession$.MODULE$.getActiveSession();
    if (active.isDefined() && active.get() instanceof org.apache.spark.sql.classic.SparkSession) {
      return Option.apply(((org.apache.spark.sql.classic.SparkSession) active.get()).sessionUUID());
    }
    return Option.empty();
  }

  private synchronized PythonDataSourceReadInfo info() {
    if (info == null) {
      info = plans.plan(planned, pushed);
    }
    return info;
  }

  @Override
  public StructType readSchema() {
    return output;
  }

  @Override
  public String description() {
    return "lance" + (pushed.length == 0 ? "" : " pushed " + java.util.Arrays.toString(pushed));
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
    return new PythonScan(source, LanceSource.PYTHON_NAME, tableSchema, plans.options(),
        new Filter[0]).toMicroBatchStream(checkpointLocation);
  }

  @Override
  public CustomMetric[] supportedCustomMetrics() {
    return source.source().createPythonMetrics();
  }

  @Override
  public InputPartition[] planInputPartitions() {
    List<byte[]> partitions = CollectionConverters.asJava(info().partitions());
    InputPartition[] out = new InputPartition[partitions.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = new PythonInputPartition(i, partitions.get(i));
    }
    return out;
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new ArrowBatchReaderFactory(source.source(), info().func(), output,
        ReadPlan.limitOf(planned), jobArtifactUuid, sessionUuid);
  }
}
