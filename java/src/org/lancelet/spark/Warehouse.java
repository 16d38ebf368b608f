package org.lancelet.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.Identifier;

/**
 * Where the lance catalog's tables live: table {@code ns.name} is the Lance dataset
 * {@code <warehouse>/ns/name.lance}, a namespace is a directory, and an identifier
 * whose name is an absolute path or URI (lance.`/data/flights`) is that dataset.
 *
 * <p>The datasets themselves are read and written by lancelet's Python source; only
 * the directory layout (listing, creating namespaces, dropping) goes through Hadoop's
 * FileSystem, so listing and DROP work where Hadoop reaches the warehouse (local paths
 * always, {@code s3a://} with hadoop-aws on the classpath).
 */
final class Warehouse {
  static final String SUFFIX = ".lance";
  // A dataset has this directory from its first commit on.
  private static final String VERSIONS = "_versions";
  private static final Pattern URI = Pattern.compile("^[A-Za-z][A-Za-z0-9+.-]*:/.*");

  private final String root;  // null: only path identifiers

  Warehouse(String root) {
    this.root = root == null || root.isEmpty() ? null : root.replaceAll("/+$", "");
  }

  static boolean isPath(Identifier ident) {
    String name = ident.name();
    return ident.namespace().length == 0 && (name.startsWith("/") || URI.matcher(name).matches());
  }

  /** The dataset URI of a table, as lancelet's Python source is given it. */
  String location(Identifier ident) {
    if (isPath(ident)) {
      return ident.name();
    }
    return directory(ident.namespace()) + "/" + checked(ident.name()) + SUFFIX;
  }

  String directory(String[] namespace) {
    if (root == null) {
      throw new IllegalArgumentException("lancelet: the lance catalog has no warehouse option "
          + "(spark.sql.catalog.<name>.warehouse), so a table is named by its path: "
          + "lance.`/data/table.lance`");
    }
    StringBuilder out = new StringBuilder(root);
    for (String part : namespace) {
      out.append('/').append(checked(part));
    }
    return out.toString();
  }

  private static String checked(String part) {
    if (part.isEmpty() || part.contains("/") || part.startsWith(".")) {
      throw new IllegalArgumentException("lancelet: '" + part + "' cannot name a lance table or "
          + "namespace (empty, containing '/' or starting with '.')");
    }
    return part;
  }

  boolean tableExists(String location) {
    return exists(new Path(location, VERSIONS));
  }

  boolean exists(String directory) {
    return exists(new Path(directory));
  }

  /** The names of the datasets (without {@value #SUFFIX}) or of the plain directories. */
  List<String> children(String directory, boolean datasets) {
    Path dir = new Path(directory);
    List<String> out = new ArrayList<>();
    try {
      FileSystem fs = fs(dir);
      if (!fs.exists(dir)) {
        return out;
      }
      for (FileStatus status : fs.listStatus(dir)) {
        String name = status.getPath().getName();
        boolean dataset = name.endsWith(SUFFIX);
        if (status.isDirectory() && !name.startsWith(".") && dataset == datasets) {
          out.add(dataset ? name.substring(0, name.length() - SUFFIX.length()) : name);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("lancelet: cannot list " + directory, e);
    }
    out.sort(null);
    return out;
  }

  void mkdirs(String directory) {
    Path dir = new Path(directory);
    try {
      fs(dir).mkdirs(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("lancelet: cannot create " + directory, e);
    }
  }

  /** Deletes a dataset or namespace directory and everything under it. */
  boolean delete(String directory) {
    Path dir = new Path(directory);
    try {
      return fs(dir).delete(dir, true);
    } catch (IOException e) {
      throw new UncheckedIOException("lancelet: cannot delete " + directory, e);
    }
  }

  private static boolean exists(Path path) {
    try {
      return fs(path).exists(path);
    } catch (IOException e) {
      throw new UncheckedIOException("lancelet: cannot reach " + path, e);
    }
  }

  private static FileSystem fs(Path path) throws IOException {
    Configuration conf = SparkSession.active().sparkContext().hadoopConfiguration();
    return path.getFileSystem(conf);
  }
}
