package org.lancelet.spark;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceCreationResult;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceReadInfo;
import org.apache.spark.sql.execution.datasources.v2.python.PythonFilterPushdownResult;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import net.razorvine.pickle.PickleException;
import net.razorvine.pickle.Unpickler;
import scala.Option;
import scala.collection.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One query's read, planned by lancelet's Python source.
 *
 * <p>The Python source receives the schema to read, and nothing else per query; what
 * else the query asks (a limit per partition, a count instead of rows) travels as
 * metadata of that schema's fields ({@link #LIMIT} here, {@link AggregateRead}'s keys),
 * which {@code lancelet.spark.read_hints} reads.  Spark's own output schema carries
 * none.  The other way, the schema the Python source infers carries the live rows of
 * the version the table reads ({@link #ROWS}), which {@link LanceSource} takes off.
 */
final class ReadPlan {
  static final String LIMIT = "lancelet.limit";
  static final String LOCAL = "lancelet.local";
  static final String ROWS = "lancelet.rows";
  private static final int CACHED = 64;

  private final LanceSource source;
  private final StructType tableSchema;
  private final CaseInsensitiveStringMap options;
  private final Long rows;
  // The table reads one version, so a query asking what an earlier one asked gets the
  // same plan: kept, as Spark keeps a DataFrame's plan, but per columns and filters.
  private final Map<List<Filter>, boolean[]> accepted = cache();
  private final Map<List<Object>, PythonDataSourceReadInfo> plans = cache();

  /** {@code rows}: the live rows the schema was inferred with, or null if unknown. */
  ReadPlan(LanceSource source, StructType tableSchema, CaseInsensitiveStringMap options,
      Long rows) {
    this.source = source;
    this.tableSchema = tableSchema;
    this.options = options;
    this.rows = rows;
  }

  private static <K, V> Map<K, V> cache() {
    return Collections.synchronizedMap(new LinkedHashMap<K, V>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
        return size() > CACHED;
      }
    });
  }

  CaseInsensitiveStringMap options() {
    return options;
  }

  private PythonDataSourceCreationResult created() {
    return source.getOrCreateDataSourceInPython(LanceSource.PYTHON_NAME, options,
        Option.apply(tableSchema));
  }

  /**
   * Which of the filters the Python reader evaluates itself, asked with a read of every
   * column ({@code every}: the table's schema, perhaps with hints for its plan).
   */
  boolean[] acceptedFilters(Filter[] filters, StructType every) {
    return accepted.computeIfAbsent(Arrays.asList(filters), key -> {
      boolean[] out = new boolean[filters.length];
      Option<PythonFilterPushdownResult> result =
          source.source().pushdownFiltersInPython(created(), every, filters);
      if (result.isDefined()) {
        Seq<Object> taken = result.get().isFilterPushed();
        List<Filter> kept = new ArrayList<>();
        for (int i = 0; i < filters.length; i++) {
          out[i] = (Boolean) taken.apply(i);
          if (out[i]) {
            kept.add(filters[i]);
          }
        }
        // This answer is also the read of every column with the filters it took (the
        // reader takes each filter on its own): a query reading them all is planned.
        if (!kept.isEmpty()) {
          plans.putIfAbsent(Arrays.asList(every, kept), result.get().readInfo());
        }
      }
      return out;
    });
  }

  /** The pickled reader and partitions of a read of {@code schema} with these filters. */
  PythonDataSourceReadInfo plan(StructType schema, Filter[] pushed) {
    List<Object> key = Arrays.asList(schema, Arrays.asList(pushed));
    return plans.computeIfAbsent(key, k -> planned(schema, pushed));
  }

  private PythonDataSourceReadInfo planned(StructType schema, Filter[] pushed) {
    if (pushed.length == 0) {
      return source.source().createReadInfoInPython(created(), schema, false);
    }
    Option<PythonFilterPushdownResult> result =
        source.source().pushdownFiltersInPython(created(), schema, pushed);
    Seq<Object> taken = result.get().isFilterPushed();
    for (int i = 0; i < pushed.length; i++) {
      if (!(Boolean) taken.apply(i)) {
        // Spark was told these filters need no second look: a reader that now declines
        // one would return rows the query excludes.
        throw new IllegalStateException("lancelet: the lance reader declined the filter "
            + pushed[i] + " it accepted when the query was planned");
      }
    }
    return result.get().readInfo();
  }

  /**
   * The number of rows of a {@code COUNT(*)} read: the count the schema was inferred
   * with, else the Python source's if it answered it from the dataset's row counts
   * while planning (its one partition is then a {@code CountedRows}, pickled as a call
   * with the count), else null.
   */
  Long answeredCount(StructType counting) {
    if (rows != null) {
      return rows;  // no read planned in Python
    }
    List<byte[]> partitions =
        CollectionConverters.asJava(plan(counting, new Filter[0]).partitions());
    if (partitions.size() != 1) {
      return null;
    }
    Object value = unpickled(partitions.get(0), COUNTED_CLASS);
    return value instanceof Counted counted ? counted.rows : null;
  }

  /**
   * The rows of a read of {@code schema} (which asks for them, see
   * {@link #local}) if the Python source found them while planning, as an Arrow IPC
   * stream (its one partition is then a {@code LocalRows}, pickled as a call with the
   * stream's bytes), else null: the read is the tasks'.
   */
  byte[] localRows(StructType schema, Filter[] pushed) {
    List<byte[]> partitions = CollectionConverters.asJava(plan(schema, pushed).partitions());
    if (partitions.size() != 1) {
      return null;
    }
    Object value = unpickled(partitions.get(0), LOCAL_CLASS);
    return value instanceof Local local ? local.stream : null;
  }

  /** A partition pickled as a call of {@code name}, unpickled; null if it is not one. */
  private static Object unpickled(byte[] pickled, String name) {
    if (!new String(pickled, StandardCharsets.ISO_8859_1).contains(name)) {
      return null;  // not worth unpickling: some other partition
    }
    try {
      return new Unpickler().loads(pickled);
    } catch (Exception unreadable) {
      return null;  // Spark's tasks read the partition: slower, still right
    }
  }

  private static final String COUNTED_MODULE = "lancelet.spark.reader";
  private static final String COUNTED_CLASS = "CountedRows";
  private static final String LOCAL_MODULE = "lancelet.spark.local_rows";
  private static final String LOCAL_CLASS = "LocalRows";

  private record Counted(long rows) {}

  private record Local(byte[] stream) {}

  static {
    Unpickler.registerConstructor(COUNTED_MODULE, COUNTED_CLASS, args -> {
      if (args.length != 1 || !(args[0] instanceof Number rows)) {
        throw new PickleException("a CountedRows holds one number");
      }
      return new Counted(rows.longValue());
    });
    Unpickler.registerConstructor(LOCAL_MODULE, LOCAL_CLASS, args -> {
      if (args.length != 1 || !(args[0] instanceof byte[] stream)) {
        throw new PickleException("a LocalRows holds one bytes object");
      }
      return new Local(stream);
    });
  }

  /** {@code required}, then the other top-level columns of {@code table} the filters test. */
  static StructType withColumnsOf(StructType required, Filter[] filters, StructType table) {
    Set<String> have = new HashSet<>(Arrays.asList(required.fieldNames()));
    Set<String> tested = new HashSet<>();
    for (Filter filter : filters) {
      for (String[] path : filter.v2references()) {
        tested.add(path[0]);
      }
    }
    StructType out = required;
    for (StructField field : table.fields()) {
      if (tested.contains(field.name()) && have.add(field.name())) {
        out = out.add(field);
      }
    }
    return out;
  }

  /** The live rows an inferred schema carries, or null. */
  static Long rowsOf(StructType inferred) {
    if (inferred.fields().length == 0 || !inferred.fields()[0].metadata().contains(ROWS)) {
      return null;
    }
    return Long.parseLong(inferred.fields()[0].metadata().getString(ROWS));
  }

  /** {@code inferred} without the live rows it carries, as Spark and users see it. */
  static StructType withoutRows(StructType inferred) {
    if (rowsOf(inferred) == null) {
      return inferred;
    }
    StructField[] fields = inferred.fields().clone();
    StructField first = fields[0];
    Metadata kept = new MetadataBuilder().withMetadata(first.metadata()).remove(ROWS).build();
    fields[0] = new StructField(first.name(), first.dataType(), first.nullable(), kept);
    return new StructType(fields);
  }

  /** {@code schema} asking the Python source for its rows if at most {@code rows}. */
  static StructType local(StructType schema, int rows) {
    return withMetadata(schema, LOCAL, Integer.toString(rows));
  }

  /** Without columns there is no field to carry the limit: Spark's own limit stands. */
  static StructType limited(StructType schema, int limit) {
    return withMetadata(schema, LIMIT, Integer.toString(limit));
  }

  /** The rows each partition of a read of {@code schema} stops at; -1: no limit. */
  static int limitOf(StructType schema) {
    if (schema.fields().length == 0 || !schema.fields()[0].metadata().contains(LIMIT)) {
      return -1;
    }
    return Integer.parseInt(schema.fields()[0].metadata().getString(LIMIT));
  }

  private static StructType withMetadata(StructType schema, String key, String value) {
    StructType out = new StructType();
    for (StructField field : schema.fields()) {
      Metadata metadata = new MetadataBuilder().withMetadata(field.metadata())
          .putString(key, value).build();
      out = out.add(new StructField(field.name(), field.dataType(), field.nullable(), metadata));
    }
    return out;
  }
}
