package org.lancelet.spark;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * A filtered read or pushed aggregate whose few rows the Python source found while the
 * query was planned ({@code lancelet.spark.local_rows}): Spark takes them as the scan's
 * rows (merging an aggregate's partial answers), as
 * Spark's {@code LocalScan}, and no task runs (starting Python tasks costs a tenth of
 * a second, whatever they read).
 */
final class LocalRowsScan implements LocalScan {
  /** The session setting: the most rows a read may answer while planned; 0 turns it off. */
  static final String MAX_ROWS = "spark.lancelet.bridge.localRows";
  static final int DEFAULT_MAX_ROWS = 10_000;

  private final StructType schema;
  private final InternalRow[] rows;
  private final String pushed;

  private LocalRowsScan(StructType schema, InternalRow[] rows, String pushed) {
    this.schema = schema;
    this.rows = rows;
    this.pushed = pushed;
  }

  /** The most rows a read of {@code schema} may answer while planned; 0: none. */
  static int maxRows(SQLConf conf, StructType schema) {
    String set = conf.getConfString(MAX_ROWS, Integer.toString(DEFAULT_MAX_ROWS));
    int most;
    try {
      most = Integer.parseInt(set.trim());
    } catch (NumberFormatException notANumber) {
      throw new IllegalArgumentException(
          MAX_ROWS + " must be a number of rows (0 turns it off), not '" + set + "'");
    }
    if (most < 0) {
      throw new IllegalArgumentException(
          MAX_ROWS + " must be a number of rows (0 turns it off), not " + most);
    }
    return schema.fields().length > 0 && atomic(schema) ? most : 0;
  }

  /** Types whose values Spark's row copy of a columnar batch keeps as they are. */
  private static boolean atomic(StructType schema) {
    for (StructField field : schema.fields()) {
      DataType type = field.dataType();
      if (!(type instanceof NumericType || type instanceof BooleanType
          || type instanceof StringType || type instanceof BinaryType
          || type instanceof DateType || type instanceof TimestampType
          || type instanceof TimestampNTZType)) {
        return false;
      }
    }
    return true;
  }

  /**
   * The scan of the rows in {@code stream} (an Arrow IPC stream of {@code schema}'s
   * columns), or null when its columns are not {@code schema}'s: the tasks then read.
   */
  static LocalRowsScan of(byte[] stream, StructType schema, String pushed) {
    List<InternalRow> rows = new ArrayList<>();
    try (BufferAllocator allocator = ArrowUtils.rootAllocator().newChildAllocator(
            "lancelet local rows", 0, Long.MAX_VALUE);
        ArrowStreamReader reader = new ArrowStreamReader(
            new ByteArrayInputStream(stream), allocator)) {
      VectorSchemaRoot root = reader.getVectorSchemaRoot();
      if (!sameColumns(root, schema)) {
        return null;
      }
      while (reader.loadNextBatch()) {
        List<FieldVector> vectors = root.getFieldVectors();
        ColumnVector[] columns = new ColumnVector[vectors.size()];
        for (int i = 0; i < columns.length; i++) {
          columns[i] = new ArrowColumnVector(vectors.get(i));
        }
        // Not closed: the reader owns the vectors and frees them.
        Iterator<InternalRow> batch = new ColumnarBatch(columns, root.getRowCount()).rowIterator();
        while (batch.hasNext()) {
          rows.add(batch.next().copy());
        }
      }
    } catch (IOException | RuntimeException | LinkageError unreadable) {
      // The tasks read the partition instead (also where this Spark's Arrow classes
      // moved): slower, still right.
      return null;
    }
    return new LocalRowsScan(schema, rows.toArray(new InternalRow[0]), pushed);
  }

  private static boolean sameColumns(VectorSchemaRoot root, StructType schema) {
    List<FieldVector> vectors = root.getFieldVectors();
    if (vectors.size() != schema.fields().length) {
      return false;
    }
    for (int i = 0; i < vectors.size(); i++) {
      DataType type = new ArrowColumnVector(vectors.get(i)).dataType();
      if (!type.equals(schema.fields()[i].dataType())) {
        return false;
      }
    }
    return true;
  }

  @Override
  public InternalRow[] rows() {
    return rows;
  }

  @Override
  public StructType readSchema() {
    return schema;
  }

  @Override
  public String description() {
    return "lance rows found while planning: " + rows.length + ", pushed " + pushed;
  }
}
