package org.lancelet.spark;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A Spark SQL catalog of Lance datasets ({@code spark.sql.catalog.lance =
 * org.lancelet.spark.LanceCatalog}, option {@code warehouse}): table {@code ns.t} is the
 * dataset {@code <warehouse>/ns/t.lance} ({@link Warehouse}).  The catalog keeps no
 * metadata of its own: a table is its dataset, read and written by lancelet's Python
 * source through {@link LanceSource}, so what SQL does is what DataFrames do.
 *
 * <p>Catalog options {@code storage.<key>} are passed to every table as the source's
 * storage options.  A table is loaded per statement, at the latest version or the one
 * {@code VERSION AS OF} / {@code TIMESTAMP AS OF} names.
 */
public class LanceCatalog implements TableCatalog, SupportsNamespaces {
  private static final String STORAGE = "storage.";

  private String name;
  private Warehouse warehouse;
  private final Map<String, String> storage = new HashMap<>();

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
    for (Map.Entry<String, String> option : options.entrySet()) {
      String key = option.getKey();
      if (key.toLowerCase(Locale.ROOT).startsWith(STORAGE)) {
        storage.put(key, option.getValue());
      } else if (!key.equalsIgnoreCase("warehouse")) {
        throw new IllegalArgumentException("lancelet: unknown option spark.sql.catalog." + name
            + "." + key + " (known: warehouse, storage.<key>)");
      }
    }
    this.warehouse = new Warehouse(options.get("warehouse"));
  }

  @Override
  public String name() {
    return name;
  }

  private Map<String, String> options(Identifier ident) {
    Map<String, String> out = new HashMap<>(storage);
    out.put("path", warehouse.location(ident));
    return out;
  }

  private String tableName(Identifier ident) {
    return name + "." + ident;
  }

  @Override
  public Table loadTable(Identifier ident) throws NoSuchTableException {
    return load(ident, options(ident));
  }

  /** {@code VERSION AS OF}: a version number or a tag. */
  @Override
  public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
    Map<String, String> options = options(ident);
    options.put("version", version);
    return load(ident, options);
  }

  /** {@code TIMESTAMP AS OF}: the latest version committed at or before it. */
  @Override
  public Table loadTable(Identifier ident, long micros) throws NoSuchTableException {
    Map<String, String> options = options(ident);
    // An ISO instant with its offset (Z), so the Python source reads it as UTC.
    options.put("timestampAsOf", Instant.EPOCH.plus(micros, ChronoUnit.MICROS).toString());
    return load(ident, options);
  }

  private Table load(Identifier ident, Map<String, String> options) throws NoSuchTableException {
    if (!warehouse.tableExists(options.get("path"))) {
      throw new NoSuchTableException(ident);
    }
    LanceSource source = new LanceSource();
    CaseInsensitiveStringMap given = new CaseInsensitiveStringMap(options);
    StructType schema = source.inferSchema(given);
    Table table = source.getTable(schema, new Transform[0], options);
    return new CatalogTable(tableName(ident), table, Collections.unmodifiableMap(options));
  }

  @Override
  public boolean tableExists(Identifier ident) {
    return warehouse.tableExists(warehouse.location(ident));
  }

  @Override
  public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
    String directory = warehouse.directory(namespace);
    if (namespace.length != 0 && !warehouse.exists(directory)) {
      throw new NoSuchNamespaceException(namespace);
    }
    return warehouse.children(directory, true).stream()
        .map(table -> Identifier.of(namespace, table)).toArray(Identifier[]::new);
  }

  @Override
  public Table createTable(Identifier ident, TableInfo info)
      throws TableAlreadyExistsException, NoSuchNamespaceException {
    TableSpec.check(tableName(ident), info);
    Map<String, String> options = options(ident);
    if (warehouse.tableExists(options.get("path"))) {
      throw new TableAlreadyExistsException(ident);
    }
    if (!Warehouse.isPath(ident) && ident.namespace().length != 0
        && !warehouse.exists(warehouse.directory(ident.namespace()))) {
      throw new NoSuchNamespaceException(ident.namespace());
    }
    writeEmpty(info.schema(), options);
    try {
      return loadTable(ident);
    } catch (NoSuchTableException e) {
      throw new IllegalStateException("lancelet: " + tableName(ident) + " vanished as it was "
          + "created", e);
    }
  }

  /** Version 1 of the dataset: the schema and no rows, committed by the Python source's
   * writer as any DataFrame write is (an existing dataset is a conflict, not overwritten). */
  private static void writeEmpty(StructType schema, Map<String, String> options) {
    SparkSession.active().createDataFrame(Collections.emptyList(), schema)
        .write().format("lance").mode("append").options(options)
        .option("write_mode", "create").save();
  }

  /** Deletes the dataset (a catalog table is its dataset: there is nothing else to drop). */
  @Override
  public boolean dropTable(Identifier ident) {
    String location = warehouse.location(ident);
    return warehouse.tableExists(location) && warehouse.delete(location);
  }

  @Override
  public Table alterTable(Identifier ident, TableChange... changes) {
    throw new UnsupportedOperationException("lancelet: ALTER TABLE is not supported by the "
        + "lance catalog; add columns by writing with option mergeSchema=true");
  }

  @Override
  public void renameTable(Identifier from, Identifier to) {
    throw new UnsupportedOperationException("lancelet: renaming a table is not supported by "
        + "the lance catalog");
  }

  @Override
  public String[][] listNamespaces() throws NoSuchNamespaceException {
    return listNamespaces(new String[0]);
  }

  @Override
  public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
    String directory = warehouse.directory(namespace);
    if (namespace.length != 0 && !warehouse.exists(directory)) {
      throw new NoSuchNamespaceException(namespace);
    }
    List<String> children = warehouse.children(directory, false);
    String[][] out = new String[children.size()][];
    for (int i = 0; i < out.length; i++) {
      String[] child = Arrays.copyOf(namespace, namespace.length + 1);
      child[namespace.length] = children.get(i);
      out[i] = child;
    }
    return out;
  }

  @Override
  public boolean namespaceExists(String[] namespace) {
    return namespace.length == 0 || warehouse.exists(warehouse.directory(namespace));
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(String[] namespace)
      throws NoSuchNamespaceException {
    if (!namespaceExists(namespace)) {
      throw new NoSuchNamespaceException(namespace);
    }
    return Collections.singletonMap(SupportsNamespaces.PROP_LOCATION, warehouse.directory(namespace));
  }

  @Override
  public void createNamespace(String[] namespace, Map<String, String> metadata)
      throws NamespaceAlreadyExistsException {
    for (String key : metadata.keySet()) {
      if (!key.equals(SupportsNamespaces.PROP_OWNER)) {  // set by Spark, not asked for
        throw new UnsupportedOperationException("lancelet: a lance catalog namespace is a "
            + "directory and keeps no properties (got " + key + ")");
      }
    }
    if (namespaceExists(namespace)) {
      throw new NamespaceAlreadyExistsException(namespace);
    }
    warehouse.mkdirs(warehouse.directory(namespace));
  }

  @Override
  public void alterNamespace(String[] namespace, NamespaceChange... changes) {
    throw new UnsupportedOperationException("lancelet: a lance catalog namespace is a "
        + "directory and keeps no properties");
  }

  @Override
  public boolean dropNamespace(String[] namespace, boolean cascade)
      throws NoSuchNamespaceException, NonEmptyNamespaceException {
    if (!namespaceExists(namespace)) {
      throw new NoSuchNamespaceException(namespace);
    }
    String directory = warehouse.directory(namespace);
    boolean empty = warehouse.children(directory, true).isEmpty()
        && warehouse.children(directory, false).isEmpty();
    if (!empty && !cascade) {
      throw new NonEmptyNamespaceException(namespace);
    }
    return warehouse.delete(directory);
  }
}
