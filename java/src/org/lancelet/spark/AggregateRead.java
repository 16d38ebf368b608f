package org.lancelet.spark;

import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.expressions.aggregate.Sum;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * An aggregation each partition answers for its rows, Spark merging the answers:
 * grouping by columns, {@code COUNT(*)}, and {@code COUNT}, {@code SUM}, {@code MIN},
 * {@code MAX} of columns.
 *
 * <p>The read schema is the answer's: the grouping columns, then one field per
 * function, each field saying in its metadata what it holds ({@link #FUNCTION} and
 * {@link #COLUMN}, read by {@code lancelet.spark.partial_aggregate}).  Anything else
 * (expressions, DISTINCT, nested or floating-point grouping columns, other functions)
 * is not pushed: Spark reads the rows.
 */
final class AggregateRead {
  static final String FUNCTION = "lancelet.aggregate";
  static final String COLUMN = "lancelet.column";

  private final StructType schema;
  private final boolean countOnly;

  private AggregateRead(StructType schema, boolean countOnly) {
    this.schema = schema;
    this.countOnly = countOnly;
  }

  /** The read schema: what each partition answers. */
  StructType schema() {
    return schema;
  }

  /** Only {@code COUNT(*)}, no grouping: the row counts answer it. */
  boolean countOnly() {
    return countOnly;
  }

  /** {@code aggregation} as a partition's read, or null if it cannot be pushed. */
  static AggregateRead of(Aggregation aggregation, StructType table) {
    StructType out = new StructType();
    int i = 0;
    for (Expression group : aggregation.groupByExpressions()) {
      StructField column = column(group, table);
      if (column == null || !groupable(column.dataType())) {
        return null;
      }
      out = out.add(field("group_" + i++, column.dataType(), "group", column.name()));
    }
    boolean countOnly = i == 0;
    int j = 0;
    for (AggregateFunc function : aggregation.aggregateExpressions()) {
      StructField answer = answer(function, table, "agg_" + j++);
      if (answer == null) {
        return null;
      }
      countOnly &= function instanceof CountStar;
      out = out.add(answer);
    }
    return new AggregateRead(out, countOnly && j > 0);
  }

  private static StructField answer(AggregateFunc function, StructType table, String name) {
    if (function instanceof CountStar) {
      return field(name, DataTypes.LongType, "count_all", null);
    }
    if (function instanceof Count count && !count.isDistinct()) {
      StructField column = column(count.column(), table);
      return column == null || !plain(column.dataType()) ? null
          : field(name, DataTypes.LongType, "count", column.name());
    }
    if (function instanceof Sum sum && !sum.isDistinct()) {
      StructField column = column(sum.column(), table);
      DataType type = column == null ? null : sumType(column.dataType());
      return type == null ? null : field(name, type, "sum", column.name());
    }
    boolean min = function instanceof Min;
    if (min || function instanceof Max) {
      Expression argument = min ? ((Min) function).column() : ((Max) function).column();
      StructField column = column(argument, table);
      // Spark orders NaN above every number; the partitions' answers would not.
      return column == null || !groupable(column.dataType()) ? null
          : field(name, column.dataType(), min ? "min" : "max", column.name());
    }
    return null;
  }

  /** The top-level table column {@code expression} names, or null. */
  private static StructField column(Expression expression, StructType table) {
    if (!(expression instanceof NamedReference reference) || reference.fieldNames().length != 1) {
      return null;
    }
    String name = reference.fieldNames()[0];
    for (StructField field : table.fields()) {
      if (field.name().equals(name)) {
        return field;
      }
    }
    return null;
  }

  /** Spark's type for SUM of a column of {@code type}, or null where not pushed. */
  private static DataType sumType(DataType type) {
    if (type instanceof ByteType || type instanceof ShortType || type instanceof IntegerType
        || type instanceof LongType) {
      return DataTypes.LongType;
    }
    if (type instanceof FloatType || type instanceof DoubleType) {
      return DataTypes.DoubleType;
    }
    if (type instanceof DecimalType decimal) {
      return DataTypes.createDecimalType(Math.min(38, decimal.precision() + 10), decimal.scale());
    }
    return null;
  }

  /** Types whose values compare and group the same in Arrow as in Spark. */
  private static boolean groupable(DataType type) {
    return type instanceof BooleanType || type instanceof ByteType || type instanceof ShortType
        || type instanceof IntegerType || type instanceof LongType || type instanceof DecimalType
        || type.equals(DataTypes.StringType) || type instanceof DateType
        || type instanceof TimestampType || type instanceof TimestampNTZType;
  }

  private static boolean plain(DataType type) {
    return groupable(type) || type instanceof FloatType || type instanceof DoubleType;
  }

  private static StructField field(String name, DataType type, String function, String column) {
    MetadataBuilder metadata = new MetadataBuilder().putString(FUNCTION, function);
    if (column != null) {
      metadata.putString(COLUMN, column);
    }
    Metadata built = metadata.build();
    return new StructField(name, type, true, built);
  }
}
