package org.lancelet.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableInfo;

/**
 * What a lance catalog's CREATE TABLE may ask: columns (nullable, as lancelet stores
 * every column Spark writes) and {@code USING lance}.  Anything else it would have to
 * ignore (partitioning, constraints, defaults, comments, table properties, LOCATION)
 * is refused, by name.
 */
final class TableSpec {
  // Spark sets these itself; they describe the statement, not the table.
  private static final Set<String> FROM_SPARK = Set.of(TableCatalog.PROP_OWNER,
      TableCatalog.PROP_IS_MANAGED_LOCATION);

  private TableSpec() {}

  /** Throws naming everything in {@code info} that the lance catalog does not do. */
  static void check(String name, TableInfo info) {
    List<String> refused = new ArrayList<>();
    if (info.partitions().length != 0) {
      refused.add("PARTITIONED BY (Lance datasets are not partitioned)");
    }
    if (info.constraints().length != 0) {
      refused.add("constraints");
    }
    for (Column column : info.columns()) {
      refused.addAll(columnRefusals(column));
    }
    refused.addAll(propertyRefusals(info.properties()));
    if (!refused.isEmpty()) {
      throw new UnsupportedOperationException("lancelet: CREATE TABLE " + name
          + " asks for what the lance catalog does not support: " + String.join("; ", refused));
    }
  }

  private static List<String> columnRefusals(Column column) {
    List<String> out = new ArrayList<>();
    String name = "column " + column.name() + ": ";
    if (!column.nullable()) {
      out.add(name + "NOT NULL (lancelet stores every column nullable, as Delta does)");
    }
    if (column.defaultValue() != null) {
      out.add(name + "DEFAULT");
    }
    if (column.generationExpression() != null || column.identityColumnSpec() != null) {
      out.add(name + "GENERATED");
    }
    if (column.comment() != null) {
      out.add(name + "COMMENT");
    }
    String metadata = column.metadataInJSON();
    if (metadata != null && !metadata.equals("{}")) {
      out.add(name + "field metadata " + metadata + " (CHAR/VARCHAR lengths among them)");
    }
    return out;
  }

  private static List<String> propertyRefusals(Map<String, String> properties) {
    List<String> out = new ArrayList<>();
    for (Map.Entry<String, String> property : properties.entrySet()) {
      String key = property.getKey();
      if (FROM_SPARK.contains(key)) {
        continue;
      }
      if (key.equals(TableCatalog.PROP_PROVIDER)) {
        if (!property.getValue().toLowerCase(Locale.ROOT).equals("lance")) {
          out.add("USING " + property.getValue() + " (the lance catalog holds lance tables)");
        }
      } else if (key.equals(TableCatalog.PROP_LOCATION)) {
        out.add("LOCATION (name the dataset by its path instead: lance.`/data/t.lance`)");
      } else if (key.startsWith(TableCatalog.OPTION_PREFIX)) {
        out.add("OPTIONS " + key.substring(TableCatalog.OPTION_PREFIX.length()));
      } else {
        out.add("property " + key);
      }
    }
    return out;
  }
}
