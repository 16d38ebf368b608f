package org.lancelet.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Collects what one query asks of a lance read (Spark calls filters, aggregates,
 * columns and limit in that order), then plans it in Python ({@link ReadPlan}).
 */
final class BridgeScanBuilder implements SupportsPushDownRequiredColumns,
    SupportsPushDownFilters, SupportsPushDownLimit, SupportsPushDownAggregates {
  private final LanceSource source;
  private final StructType schema;
  private final ReadPlan plans;
  private StructType required;
  private Filter[] pushed = new Filter[0];
  private AggregateRead aggregate;
  private Long counted;
  private int limit = -1;

  BridgeScanBuilder(LanceSource source, StructType schema, ReadPlan plans) {
    this.source = source;
    this.schema = schema;
    this.plans = plans;
    this.required = schema;
  }

  @Override
  public Filter[] pushFilters(Filter[] filters) {
    if (!SQLConf.get().pythonFilterPushDown() || filters.length == 0) {
      return filters;
    }
    // Asked as a read of every column that may answer its rows while planned: the
    // plan a query reading every column then uses, in the same call.
    int most = LocalRowsScan.maxRows(SQLConf.get(), schema);
    boolean[] taken = plans.acceptedFilters(filters,
        most > 0 ? ReadPlan.local(schema, most) : schema);
    List<Filter> kept = new ArrayList<>();
    List<Filter> left = new ArrayList<>();
    for (int i = 0; i < filters.length; i++) {
      (taken[i] ? kept : left).add(filters[i]);
    }
    pushed = kept.toArray(new Filter[0]);
    return left.toArray(new Filter[0]);
  }

  @Override
  public Filter[] pushedFilters() {
    return pushed;
  }

  /**
   * Spark takes the answer as the query's only when the dataset's row counts give a
   * {@code COUNT(*)} while planning (no grouping, no pushed filter, no {@code filter}
   * option): the scan is then that one row.
   */
  @Override
  public boolean supportCompletePushDown(Aggregation aggregation) {
    AggregateRead read = pushed.length == 0 ? AggregateRead.of(aggregation, schema) : null;
    if (read == null || !read.countOnly()) {
      return false;
    }
    counted = plans.answeredCount(read.schema());
    return counted != null;
  }

  /**
   * Aggregates each partition answers for its rows (see {@link AggregateRead}).  Not
   * with pushed filters: Spark sends them to Python by the read schema's columns,
   * which an aggregate's schema does not have.
   */
  @Override
  public boolean pushAggregation(Aggregation aggregation) {
    aggregate = pushed.length == 0 ? AggregateRead.of(aggregation, schema) : null;
    if (aggregate == null || !aggregate.countOnly()) {
      counted = null;
    }
    return aggregate != null;
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    required = requiredSchema;
  }

  /** Each partition stops after {@code limit} rows; Spark still limits the whole. */
  @Override
  public boolean pushLimit(int limit) {
    if (aggregate != null) {
      return false;
    }
    this.limit = limit;
    return true;
  }

  @Override
  public Scan build() {
    if (limit >= 0 && required.fields().length == 0) {
      limit = -1;  // no field to carry it: Spark's own limit stands
    }
    if (aggregate != null) {
      StructType answer = aggregate.schema();
      StructType output = withoutMetadata(answer);
      if (counted != null) {
        return new CountScan(output, counted);
      }
      // The partitions' answers, merged by Spark, found while planned where they may be.
      return scan(answer, output, LocalRowsScan.maxRows(SQLConf.get(), output));
    }
    // Spark sends pushed filters to Python by the read schema's fields, so the columns
    // they test are read too (Spark projects them away).
    StructType read = ReadPlan.withColumnsOf(required, pushed, schema);
    StructType hinted = limit >= 0 ? ReadPlan.limited(read, limit) : read;
    // A filtered read asks for its rows while planned: few, they are the scan.
    return scan(hinted, read, filtered() ? LocalRowsScan.maxRows(SQLConf.get(), read) : 0);
  }

  /**
   * The scan of a read of {@code planned} giving Spark {@code output}: the rows the
   * Python source found while planning, when asked for at most {@code most} (0: not
   * asked) and they were few, else the tasks' read.
   */
  private Scan scan(StructType planned, StructType output, int most) {
    if (most > 0) {
      planned = ReadPlan.local(planned, most);
      byte[] rows = plans.localRows(planned, pushed);
      LocalRowsScan local = rows == null ? null
          : LocalRowsScan.of(rows, output, java.util.Arrays.toString(pushed));
      if (local != null) {
        return local;
      }
    }
    return new BridgeScan(source, schema, plans, planned, pushed, output);
  }

  /** Pushed filters, or the {@code filter} read option. */
  private boolean filtered() {
    return pushed.length > 0 || plans.options().containsKey("filter");
  }

  private static StructType withoutMetadata(StructType schema) {
    StructType out = new StructType();
    for (StructField field : schema.fields()) {
      out = out.add(new StructField(field.name(), field.dataType(), field.nullable(),
          Metadata.empty()));
    }
    return out;
  }
}
