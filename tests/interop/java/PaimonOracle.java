/*
 * Test oracle: drives Java Apache Paimon 0.9 (the jar shipped inside the pypaimon 0.2.0 sdist)
 * from a JSON op file, so that one JVM start can create, write, alter, compact and read tables.
 *
 * Usage: java PaimonOracle <ops.json> <results.jsonl>, or java PaimonOracle --serve (one JVM
 * for many such runs: see serve()).
 *
 * ops.json is {"warehouse": "/path", "ops": [ {...}, ... ]}; every op names its table as
 * "db.name". One JSON line per op is written to results.jsonl. Values travel as JSON typed by
 * the column type: integers and floats as numbers, DECIMAL as a plain string, DATE as ISO
 * "yyyy-mm-dd", TIMESTAMP / TIMESTAMP_LTZ as "yyyy-mm-ddThh:mm:ss.nnnnnnnnn" (UTC wall clock for
 * LTZ), binary as base64, ARRAY as a list, MAP as a list of [key, value] pairs, ROW as an object.
 * Any failure prints the stack trace on stderr and exits with status 1.
 *
 * Ops (every one has "op" and "table"):
 *   create  fields [{name, type, comment?}] (type: a Paimon SQL string such as
 *           "DECIMAL(10, 2) NOT NULL", or Paimon's JSON object for ARRAY / MAP / ROW),
 *           primary_keys, partition_keys, options {key: value}
 *   write   rows [{column: value, "__kind__": "+I" | "-U" | "+U" | "-D" (default +I)}]: one commit;
 *           options? {key: value}: dynamic options of this write (e.g. write-only)
 *   alter   changes [{change: addColumn (name, type, comment?, position?, reference?) |
 *           renameColumn (name, new_name) | dropColumn (name) | updateColumnType (name, type,
 *           keep_nullability?) | updateColumnNullability (name, nullable) | updateColumnComment
 *           (name, comment) | updateColumnPosition (name, position, reference?) | setOption (key,
 *           value) | removeOption (key)}]; position: first | last | after | before
 *   overwrite rows, partition? {key: value}: one OVERWRITE commit (BatchWriteBuilder
 *           .withOverwrite: of that static partition, or the whole table without one)
 *   expire_partitions run the table's PartitionExpire once (set
 *           'partition.expiration-check-interval' to '0 s' so the first call checks) ->
 *           {"expired": [{key: value}, ...]} as Paimon renders the dropped partitions
 *   compact full compaction of every (partition, bucket) that has files: one commit
 *   delete_dv column, values [..]: on an append table with deletion vectors, delete every row
 *           whose column (INT, BIGINT or STRING) is one of values, as Paimon's Spark DELETE
 *           does: a deletion vector per touched data file (row positions, merged with the
 *           file's old vector) through AppendDeletionFileMaintainer, committed as index
 *           changes only -> {"deleted": rows newly deleted}
 *   read    snapshot_id? | tag? | timestamp_millis? -> {"rows": [...], "latest": id} of the
 *           latest (or that) snapshot (scan.snapshot-id / scan.tag-name / scan.timestamp-millis);
 *           "latest": the table's latest snapshot id when it was read
 *   tags    -> {"tags": {name: snapshot id}} as TagManager lists them
 *   schema  -> {"schema_id", "fields": [{id, name, type}]} of the latest schema
 *   system  name -> {"fields": [{name, type}], "rows": [...]} of the system table
 *           "db.table$name" (Catalog.getTable), read with a ReadBuilder
 *   states  (no table) kind: rbm32 | rbm64 | hll_sketch | theta_sketch, and either
 *           encode [set, ...] (a set: a list of integers, or {"values": [...], "ranges":
 *           [[start, stop, step], ...]}): each set serialized as Paimon does (RoaringBitmap32 /
 *           RoaringBitmap64 .serialize, a default HllSketch (lgK 12, HLL_4) toCompactByteArray,
 *           a default UpdateSketch compact().toByteArray(), values added as longs) ->
 *           {"states": [base64, ...]}; or decode [base64 | null, ...]: each read back as Paimon
 *           does (RoaringBitmap32 / RoaringBitmap64 .deserialize, HllSketch.heapify,
 *           Sketches.wrapSketch) -> {"states": [{"values": [...]} (bitmaps; rbm32 values
 *           unsigned, rbm64 values as Java longs) | {"estimate": x} (sketches) | null]}
 *
 * A spec with "exclusive_commits": true runs against a catalog whose local file system renames
 * exclusively (see ExclusiveLocalFileIO), for tests of commits racing other processes.
 *
 * An op with "may_fail": true that throws (a compaction that lost a race to another writer)
 * gives {"failed": the exception} and the run goes on; any other failing op ends the run.
 */

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.fs.Path;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeChecks;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

public final class PaimonOracle {

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final DateTimeFormatter TS_FORMAT =
            DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSSSSS");
    private static final String KIND = "__kind__";

    private PaimonOracle() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("--serve")) {
            serve();
            return;
        }
        if (args.length != 2) {
            System.err.println("usage: PaimonOracle <ops.json> <results.jsonl> | --serve");
            System.exit(2);
        }
        System.exit(runSpec(new File(args[0]), new File(args[1]), System.err) ? 0 : 1);
    }

    /**
     * Serve requests until standard input ends: each line is "ops.json TAB results.jsonl TAB
     * errors.txt"; the ops run as one command would run them, a failure's report goes to
     * errors.txt, and the reply on standard output is one line, "ok" or "failed". Anything else
     * the libraries print goes to standard error, so the reply channel carries replies only.
     */
    private static void serve() throws Exception {
        PrintStream replies = System.out;
        System.setOut(System.err);
        BufferedReader requests =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = requests.readLine()) != null) {
            String[] files = line.split("\t");
            boolean ok;
            try (PrintStream errors =
                    new PrintStream(new FileOutputStream(files[2]), true, "UTF-8")) {
                ok = runSpec(new File(files[0]), new File(files[1]), errors);
            }
            replies.println(ok ? "ok" : "failed");
            replies.flush();
        }
    }

    /**
     * Run the ops of one spec file against its warehouse, one result line each, in order; stop
     * at the first failing op, report it with its stack trace on {@code errors}, return false.
     */
    private static boolean runSpec(File specFile, File resultFile, PrintStream errors)
            throws Exception {
        JsonNode spec = MAPPER.readTree(specFile);
        String warehouse = spec.get("warehouse").asText();
        boolean exclusive =
                spec.has("exclusive_commits") && spec.get("exclusive_commits").asBoolean();
        int index = 0;
        try (Catalog catalog =
                        exclusive
                                ? new org.apache.paimon.catalog.FileSystemCatalog(
                                        new ExclusiveLocalFileIO(), new Path(warehouse))
                                : CatalogFactory.createCatalog(
                                        CatalogContext.create(new Path(warehouse)));
                BufferedWriter out =
                        Files.newBufferedWriter(resultFile.toPath(), StandardCharsets.UTF_8)) {
            for (JsonNode op : spec.get("ops")) {
                ObjectNode result;
                try {
                    result = run(catalog, op);
                } catch (Exception e) {
                    if (op.has("may_fail") && op.get("may_fail").asBoolean()) {
                        // an op racing other writers may lose (a compaction's conflict)
                        result = NODES.objectNode();
                        result.put("failed", String.valueOf(e));
                        result.put("op", op.get("op").asText());
                        out.write(MAPPER.writeValueAsString(result));
                        out.newLine();
                        index++;
                        continue;
                    }
                    errors.println("PaimonOracle: op #" + index + " failed: " + op);
                    e.printStackTrace(errors);
                    return false;
                }
                result.put("op", op.get("op").asText());
                out.write(MAPPER.writeValueAsString(result));
                out.newLine();
                index++;
            }
        }
        return true;
    }

    /**
     * Paimon 0.9's local file system with an exclusive rename: a hard link to the destination
     * (which fails if it exists), then the source removed. Paimon's own rename checks that the
     * destination is free and then moves over it, under a lock of its JVM only, so a snapshot
     * another process publishes in between is replaced (and that commit lost); with this one a
     * commit's snapshot is created exclusively, as on HDFS.
     */
    static final class ExclusiveLocalFileIO extends org.apache.paimon.fs.local.LocalFileIO {
        private static final long serialVersionUID = 1L;

        @Override
        public boolean rename(Path src, Path dst) throws IOException {
            java.nio.file.Path from = new File(src.toUri().getPath()).toPath();
            java.nio.file.Path to = new File(dst.toUri().getPath()).toPath();
            if (Files.isDirectory(from)) {
                return super.rename(src, dst);
            }
            Files.createDirectories(to.getParent());
            try {
                Files.createLink(to, from);
            } catch (java.nio.file.FileAlreadyExistsException
                    | java.nio.file.NoSuchFileException e) {
                return false;
            }
            Files.delete(from);
            return true;
        }
    }

    private static ObjectNode run(Catalog catalog, JsonNode op) throws Exception {
        String name = op.get("op").asText();
        if (name.equals("states")) {
            return states(op);
        }
        Identifier id = Identifier.fromString(op.get("table").asText());
        switch (name) {
            case "create":
                return create(catalog, id, op);
            case "write":
                return write(withOptions((FileStoreTable) catalog.getTable(id), op), op);
            case "alter":
                return alter(catalog, id, op);
            case "compact":
                return compact((FileStoreTable) catalog.getTable(id));
            case "delete_dv":
                return deleteDv((FileStoreTable) catalog.getTable(id), op);
            case "expire":
                return expire((FileStoreTable) catalog.getTable(id), op);
            case "read":
                return read((FileStoreTable) catalog.getTable(id), op);
            case "schema":
                return schema((FileStoreTable) catalog.getTable(id));
            case "system":
                return systemTable(catalog, id, op.get("name").asText());
            case "tag":
                return tag((FileStoreTable) catalog.getTable(id), op);
            case "tags":
                return tags((FileStoreTable) catalog.getTable(id));
            case "branch":
                ((FileStoreTable) catalog.getTable(id))
                        .createBranch(op.get("name").asText(), op.get("tag").asText());
                return NODES.objectNode();
            case "consumer":
                {
                    FileStoreTable table = (FileStoreTable) catalog.getTable(id);
                    new org.apache.paimon.consumer.ConsumerManager(table.fileIO(), table.location())
                            .resetConsumer(
                                    op.get("name").asText(),
                                    new org.apache.paimon.consumer.Consumer(
                                            op.get("next_snapshot").asLong()));
                    return NODES.objectNode();
                }
            case "file_index":
                return fileIndex((FileStoreTable) catalog.getTable(id), op);
            case "overwrite":
                return overwrite((FileStoreTable) catalog.getTable(id), op);
            case "expire_partitions":
                return expirePartitions((FileStoreTable) catalog.getTable(id));
            default:
                throw new IllegalArgumentException("unknown op " + name);
        }
    }

    // ------------------------------------------------------------------ aggregate states

    private static ObjectNode states(JsonNode op) throws Exception {
        String kind = op.get("kind").asText();
        ArrayNode states = NODES.arrayNode();
        if (op.has("encode")) {
            for (JsonNode set : op.get("encode")) {
                List<Long> values = new ArrayList<>();
                JsonNode listed = set.isArray() ? set : set.get("values");
                if (listed != null) {
                    for (JsonNode v : listed) {
                        values.add(v.asLong());
                    }
                }
                JsonNode ranges = set.isObject() ? set.get("ranges") : null;
                if (ranges != null) {
                    for (JsonNode r : ranges) {
                        long stop = r.get(1).asLong();
                        long step = r.get(2).asLong();
                        for (long v = r.get(0).asLong(); v < stop; v += step) {
                            values.add(v);
                        }
                    }
                }
                states.add(Base64.getEncoder().encodeToString(encodeState(kind, values)));
            }
        } else {
            for (JsonNode item : op.get("decode")) {
                if (item.isNull()) {
                    states.addNull();
                } else {
                    states.add(decodeState(kind, Base64.getDecoder().decode(item.asText())));
                }
            }
        }
        ObjectNode result = NODES.objectNode();
        result.set("states", states);
        return result;
    }

    private static byte[] encodeState(String kind, List<Long> values) throws Exception {
        switch (kind) {
            case "rbm32":
                {
                    org.apache.paimon.utils.RoaringBitmap32 b =
                            new org.apache.paimon.utils.RoaringBitmap32();
                    for (long v : values) {
                        b.add((int) v);
                    }
                    return b.serialize();
                }
            case "rbm64":
                {
                    org.apache.paimon.utils.RoaringBitmap64 b =
                            new org.apache.paimon.utils.RoaringBitmap64();
                    for (long v : values) {
                        b.add(v);
                    }
                    return b.serialize();
                }
            case "hll_sketch":
                {
                    org.apache.paimon.shade.org.apache.datasketches.hll.HllSketch s =
                            new org.apache.paimon.shade.org.apache.datasketches.hll.HllSketch();
                    for (long v : values) {
                        s.update(v);
                    }
                    return s.toCompactByteArray();
                }
            case "theta_sketch":
                {
                    org.apache.paimon.shade.org.apache.datasketches.theta.UpdateSketch s =
                            org.apache.paimon.shade.org.apache.datasketches.theta.UpdateSketch
                                    .builder()
                                    .build();
                    for (long v : values) {
                        s.update(v);
                    }
                    return s.compact().toByteArray();
                }
            default:
                throw new IllegalArgumentException("unknown state kind " + kind);
        }
    }

    private static ObjectNode decodeState(String kind, byte[] bytes) throws Exception {
        ObjectNode out = NODES.objectNode();
        switch (kind) {
            case "rbm32":
                {
                    org.apache.paimon.utils.RoaringBitmap32 b =
                            new org.apache.paimon.utils.RoaringBitmap32();
                    b.deserialize(bytes);
                    ArrayNode values = out.putArray("values");
                    Iterator<Integer> it = b.iterator();
                    while (it.hasNext()) {
                        values.add(Integer.toUnsignedLong(it.next()));
                    }
                    return out;
                }
            case "rbm64":
                {
                    // Paimon's own read first (what its aggregate does), then the values
                    new org.apache.paimon.utils.RoaringBitmap64().deserialize(bytes);
                    org.apache.paimon.shade.org.roaringbitmap.longlong.Roaring64Bitmap b =
                            new org.apache.paimon.shade.org.roaringbitmap.longlong
                                    .Roaring64Bitmap();
                    b.deserialize(
                            new java.io.DataInputStream(new java.io.ByteArrayInputStream(bytes)));
                    ArrayNode values = out.putArray("values");
                    org.apache.paimon.shade.org.roaringbitmap.longlong.LongIterator it =
                            b.getLongIterator();
                    while (it.hasNext()) {
                        values.add(it.next());
                    }
                    return out;
                }
            case "hll_sketch":
                out.put(
                        "estimate",
                        org.apache.paimon.shade.org.apache.datasketches.hll.HllSketch.heapify(
                                        bytes)
                                .getEstimate());
                return out;
            case "theta_sketch":
                out.put(
                        "estimate",
                        org.apache.paimon.shade.org.apache.datasketches.theta.Sketches.wrapSketch(
                                        org.apache.paimon.shade.org.apache.datasketches.memory
                                                .Memory.wrap(bytes))
                                .getEstimate());
                return out;
            default:
                throw new IllegalArgumentException("unknown state kind " + kind);
        }
    }

    // ------------------------------------------------------------------ create / alter

    private static DataType parseType(JsonNode type) {
        return DataTypeJsonParser.parseDataType(type);
    }

    private static ObjectNode create(Catalog catalog, Identifier id, JsonNode op)
            throws Exception {
        catalog.createDatabase(id.getDatabaseName(), true);
        Schema.Builder builder = Schema.newBuilder();
        for (JsonNode field : op.get("fields")) {
            JsonNode comment = field.get("comment");
            builder.column(
                    field.get("name").asText(),
                    parseType(field.get("type")),
                    comment == null || comment.isNull() ? null : comment.asText());
        }
        builder.primaryKey(strings(op.get("primary_keys")));
        builder.partitionKeys(strings(op.get("partition_keys")));
        JsonNode options = op.get("options");
        if (options != null) {
            Iterator<Map.Entry<String, JsonNode>> it = options.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                builder.option(e.getKey(), e.getValue().asText());
            }
        }
        catalog.createTable(id, builder.build(), false);
        return NODES.objectNode();
    }

    private static List<String> strings(JsonNode node) {
        List<String> list = new ArrayList<>();
        if (node != null) {
            for (JsonNode n : node) {
                list.add(n.asText());
            }
        }
        return list;
    }

    private static ObjectNode alter(Catalog catalog, Identifier id, JsonNode op) throws Exception {
        List<SchemaChange> changes = new ArrayList<>();
        for (JsonNode c : op.get("changes")) {
            changes.add(change(c));
        }
        catalog.alterTable(id, changes, false);
        return NODES.objectNode();
    }

    private static String text(JsonNode c, String key) {
        JsonNode n = c.get(key);
        if (n == null || n.isNull()) {
            throw new IllegalArgumentException("schema change " + c + " needs '" + key + "'");
        }
        return n.asText();
    }

    /** The "position" of a change: first, last, after / before "reference", or none (null). */
    private static SchemaChange.Move move(JsonNode c) {
        JsonNode position = c.get("position");
        if (position == null || position.isNull()) {
            return null;
        }
        String name = text(c, "name");
        switch (position.asText()) {
            case "first":
                return SchemaChange.Move.first(name);
            case "last":
                return SchemaChange.Move.last(name);
            case "after":
                return SchemaChange.Move.after(name, text(c, "reference"));
            case "before":
                return SchemaChange.Move.before(name, text(c, "reference"));
            default:
                throw new IllegalArgumentException("unknown position " + position);
        }
    }

    private static SchemaChange change(JsonNode c) {
        String kind = text(c, "change");
        switch (kind) {
            case "addColumn":
                {
                    SchemaChange.Move move = move(c);
                    JsonNode comment = c.get("comment");
                    return SchemaChange.addColumn(
                            text(c, "name"),
                            parseType(c.get("type")),
                            comment == null || comment.isNull() ? null : comment.asText(),
                            move);
                }
            case "renameColumn":
                return SchemaChange.renameColumn(text(c, "name"), text(c, "new_name"));
            case "dropColumn":
                return SchemaChange.dropColumn(text(c, "name"));
            case "updateColumnType":
                {
                    JsonNode keep = c.get("keep_nullability");
                    return SchemaChange.updateColumnType(
                            text(c, "name"),
                            parseType(c.get("type")),
                            keep != null && keep.asBoolean());
                }
            case "updateColumnPosition":
                {
                    SchemaChange.Move move = move(c);
                    if (move == null) {
                        throw new IllegalArgumentException("updateColumnPosition needs a position");
                    }
                    return SchemaChange.updateColumnPosition(move);
                }
            case "updateColumnNullability":
                return SchemaChange.updateColumnNullability(
                        text(c, "name"), c.get("nullable").asBoolean());
            case "updateColumnComment":
                return SchemaChange.updateColumnComment(text(c, "name"), text(c, "comment"));
            case "setOption":
                return SchemaChange.setOption(text(c, "key"), text(c, "value"));
            case "removeOption":
                return SchemaChange.removeOption(text(c, "key"));
            default:
                throw new IllegalArgumentException("unknown schema change " + kind);
        }
    }

    // ------------------------------------------------------------------ write / compact

    /** The table with the op's "options" {key: value} as dynamic options (none: as it is). */
    private static FileStoreTable withOptions(FileStoreTable table, JsonNode op) {
        JsonNode options = op.get("options");
        if (options == null) {
            return table;
        }
        Map<String, String> dynamic = new HashMap<>();
        options.fields().forEachRemaining(e -> dynamic.put(e.getKey(), e.getValue().asText()));
        return table.copy(dynamic);
    }

    private static ObjectNode write(FileStoreTable table, JsonNode op) throws Exception {
        RowType rowType = table.rowType();
        List<DataField> fields = rowType.getFields();
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = builder.newWrite();
                BatchTableCommit commit = builder.newCommit()) {
            // lookup compaction (deletion vectors, changelog-producer=lookup) spills to disk
            write.withIOManager(
                    org.apache.paimon.disk.IOManager.create(System.getProperty("java.io.tmpdir")));
            for (JsonNode row : op.get("rows")) {
                JsonNode kindNode = row.get(KIND);
                RowKind kind =
                        kindNode == null ? RowKind.INSERT : RowKind.fromShortString(kindNode.asText());
                GenericRow out = new GenericRow(kind, fields.size());
                for (int i = 0; i < fields.size(); i++) {
                    DataField f = fields.get(i);
                    out.setField(i, toInternal(row.get(f.name()), f.type()));
                }
                write.write(out);
            }
            commit.commit(write.prepareCommit());
        }
        return NODES.objectNode();
    }

    private static ObjectNode compact(FileStoreTable table) throws Exception {
        if (table.bucketMode() == org.apache.paimon.table.BucketMode.BUCKET_UNAWARE) {
            return compactUnaware(table);
        }
        Set<Map.Entry<BinaryRow, Integer>> targets = new LinkedHashSet<>();
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit ds = (DataSplit) split;
            targets.add(new java.util.AbstractMap.SimpleEntry<>(ds.partition(), ds.bucket()));
        }
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = builder.newWrite();
                BatchTableCommit commit = builder.newCommit()) {
            // lookup compaction (deletion vectors, changelog-producer=lookup) spills to disk
            write.withIOManager(
                    org.apache.paimon.disk.IOManager.create(System.getProperty("java.io.tmpdir")));
            for (Map.Entry<BinaryRow, Integer> t : targets) {
                write.compact(t.getKey(), t.getValue(), true);
            }
            commit.commit(write.prepareCommit());
        }
        ObjectNode result = NODES.objectNode();
        result.put("buckets", targets.size());
        return result;
    }

    /**
     * An unaware-bucket append table: Paimon's batch compaction coordinator plans the tasks
     * (small files packed into bins), each task rewrites its bin.
     */
    private static ObjectNode compactUnaware(FileStoreTable table) throws Exception {
        List<org.apache.paimon.append.UnawareAppendCompactionTask> tasks =
                new org.apache.paimon.append.UnawareAppendTableCompactionCoordinator(table, false)
                        .run();
        List<org.apache.paimon.table.sink.CommitMessage> messages = new ArrayList<>();
        org.apache.paimon.operation.AppendOnlyFileStoreWrite write =
                (org.apache.paimon.operation.AppendOnlyFileStoreWrite)
                        table.store().newWrite("java-oracle-compact");
        try {
            for (org.apache.paimon.append.UnawareAppendCompactionTask task : tasks) {
                messages.add(task.doCompact(table, write));
            }
        } finally {
            write.close();
        }
        try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
            commit.commit(messages);
        }
        ObjectNode result = NODES.objectNode();
        result.put("tasks", tasks.size());
        return result;
    }

    /**
     * Delete rows of an append table with deletion vectors the way Paimon 0.9's Spark DELETE
     * does: read each live data file raw (no vector applied, so row i is position i), mark the
     * matching positions, hand each vector to the (partition, bucket)'s
     * AppendDeletionFileMaintainer (unaware: per partition, bucket 0) and commit what its
     * persist() returns as index increments.
     */
    private static ObjectNode deleteDv(FileStoreTable table, JsonNode op) throws Exception {
        RowType rowType = table.rowType();
        int idx = rowType.getFieldIndex(op.get("column").asText());
        DataType type = rowType.getTypeAt(idx);
        Set<String> targets = new java.util.HashSet<>();
        for (JsonNode v : op.get("values")) {
            targets.add(v.asText());
        }
        Long snapshotId = table.snapshotManager().latestSnapshotId();
        org.apache.paimon.index.IndexFileHandler handler = table.store().newIndexFileHandler();
        boolean unaware = table.bucketMode() == org.apache.paimon.table.BucketMode.BUCKET_UNAWARE;
        Map<List<Object>, org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer>
                maintainers = new LinkedHashMap<>();
        Set<List<Object>> touched = new LinkedHashSet<>();
        ReadBuilder rb = table.newReadBuilder();
        long deleted = 0;
        for (Split split : rb.newScan().plan().splits()) {
            DataSplit ds = (DataSplit) split;
            List<Object> key = java.util.Arrays.asList(ds.partition(), ds.bucket());
            org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer m =
                    maintainers.computeIfAbsent(
                            key,
                            k ->
                                    unaware
                                            ? org.apache.paimon.deletionvectors.append
                                                    .AppendDeletionFileMaintainer.forUnawareAppend(
                                                    handler, snapshotId, ds.partition())
                                            : org.apache.paimon.deletionvectors.append
                                                    .AppendDeletionFileMaintainer.forBucketedAppend(
                                                    handler,
                                                    snapshotId,
                                                    ds.partition(),
                                                    ds.bucket()));
            for (org.apache.paimon.io.DataFileMeta file : ds.dataFiles()) {
                DataSplit one =
                        DataSplit.builder()
                                .withSnapshot(snapshotId)
                                .withPartition(ds.partition())
                                .withBucket(ds.bucket())
                                .withBucketPath(ds.bucketPath())
                                .withDataFiles(java.util.Collections.singletonList(file))
                                .rawConvertible(true)
                                .isStreaming(false)
                                .build();
                org.apache.paimon.deletionvectors.BitmapDeletionVector dv =
                        new org.apache.paimon.deletionvectors.BitmapDeletionVector();
                long[] pos = {0};
                try (RecordReader<InternalRow> reader = rb.newRead().createReader(one)) {
                    reader.forEachRemaining(
                            row -> {
                                if (!row.isNullAt(idx)
                                        && targets.contains(keyText(row, idx, type))) {
                                    dv.delete(pos[0]);
                                }
                                pos[0]++;
                            });
                }
                if (!dv.isEmpty()) {
                    deleted += dv.getCardinality();
                    m.notifyNewDeletionVector(file.fileName(), dv);
                    touched.add(key);
                }
            }
        }
        List<org.apache.paimon.table.sink.CommitMessage> messages = new ArrayList<>();
        for (List<Object> key : touched) {
            org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer m =
                    maintainers.get(key);
            List<org.apache.paimon.index.IndexFileMeta> added = new ArrayList<>();
            List<org.apache.paimon.index.IndexFileMeta> removed = new ArrayList<>();
            for (org.apache.paimon.manifest.IndexManifestEntry e : m.persist()) {
                if (e.kind() == org.apache.paimon.manifest.FileKind.ADD) {
                    added.add(e.indexFile());
                } else {
                    removed.add(e.indexFile());
                }
            }
            messages.add(
                    new org.apache.paimon.table.sink.CommitMessageImpl(
                            m.getPartition(),
                            m.getBucket(),
                            org.apache.paimon.io.DataIncrement.emptyIncrement(),
                            org.apache.paimon.io.CompactIncrement.emptyIncrement(),
                            new org.apache.paimon.io.IndexIncrement(added, removed)));
        }
        try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
            commit.commit(messages);
        }
        ObjectNode result = NODES.objectNode();
        result.put("deleted", deleted);
        return result;
    }

    private static String keyText(InternalRow row, int idx, DataType type) {
        switch (type.getTypeRoot()) {
            case INTEGER:
                return String.valueOf(row.getInt(idx));
            case BIGINT:
                return String.valueOf(row.getLong(idx));
            case VARCHAR:
            case CHAR:
                return row.getString(idx).toString();
            default:
                throw new IllegalArgumentException("delete_dv: unsupported column type " + type);
        }
    }

    /** Paimon's own snapshot expiry: keep {@code retain} snapshots, however young. */
    private static ObjectNode expire(FileStoreTable table, JsonNode op) throws Exception {
        int retain = op.get("retain").asInt();
        int expired =
                table.newExpireSnapshots()
                        .config(
                                org.apache.paimon.options.ExpireConfig.builder()
                                        .snapshotRetainMin(retain)
                                        .snapshotRetainMax(retain)
                                        .snapshotTimeRetain(java.time.Duration.ZERO)
                                        .build())
                        .expire();
        ObjectNode result = NODES.objectNode();
        result.put("expired", expired);
        return result;
    }

    /** Tag the snapshot "snapshot_id" (default: the latest) as "name". */
    private static ObjectNode tag(FileStoreTable table, JsonNode op) {
        JsonNode snapshot = op.get("snapshot_id");
        if (snapshot != null && !snapshot.isNull()) {
            table.createTag(op.get("name").asText(), snapshot.asLong());
        } else {
            table.createTag(op.get("name").asText());
        }
        return NODES.objectNode();
    }

    /** Every tag's name and snapshot id, as Java's TagManager reads the tag files. */
    private static ObjectNode tags(FileStoreTable table) {
        ObjectNode tags = NODES.objectNode();
        for (Map.Entry<org.apache.paimon.Snapshot, List<String>> e :
                table.tagManager().tags().entrySet()) {
            for (String name : e.getValue()) {
                tags.put(name, e.getKey().id());
            }
        }
        ObjectNode result = NODES.objectNode();
        result.set("tags", tags);
        return result;
    }

    // ------------------------------------------------------------------ read / schema

    private static ObjectNode read(FileStoreTable table, JsonNode op) throws Exception {
        JsonNode snapshot = op.get("snapshot_id");
        if (snapshot != null && !snapshot.isNull()) {
            Map<String, String> dynamic = new HashMap<>();
            dynamic.put("scan.snapshot-id", snapshot.asText());
            table = table.copy(dynamic);
        }
        JsonNode tagName = op.get("tag");
        if (tagName != null && !tagName.isNull()) {
            Map<String, String> dynamic = new HashMap<>();
            dynamic.put("scan.tag-name", tagName.asText());
            table = table.copy(dynamic);
        }
        JsonNode millis = op.get("timestamp_millis");
        if (millis != null && !millis.isNull()) {
            Map<String, String> dynamic = new HashMap<>();
            dynamic.put("scan.timestamp-millis", millis.asText());
            table = table.copy(dynamic);
        }
        RowType rowType = table.rowType();
        ReadBuilder rb = table.newReadBuilder();
        List<Split> splits = rb.newScan().plan().splits();
        ArrayNode rows = NODES.arrayNode();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(splits)) {
            reader.forEachRemaining(row -> rows.add(renderRow(row, rowType)));
        }
        ObjectNode result = NODES.objectNode();
        result.set("rows", rows);
        result.put("latest", table.snapshotManager().latestSnapshotId());
        return result;
    }

    /** Every row of the system table "db.table$name", and its columns with their types. */
    private static ObjectNode systemTable(Catalog catalog, Identifier id, String name)
            throws Exception {
        Table table =
                catalog.getTable(
                        Identifier.create(id.getDatabaseName(), id.getObjectName() + "$" + name));
        RowType rowType = table.rowType();
        ArrayNode fields = NODES.arrayNode();
        for (DataField f : rowType.getFields()) {
            ObjectNode field = NODES.objectNode();
            field.put("name", f.name());
            field.put("type", f.type().toString());
            fields.add(field);
        }
        ReadBuilder rb = table.newReadBuilder();
        List<Split> splits = rb.newScan().plan().splits();
        ArrayNode rows = NODES.arrayNode();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(splits)) {
            reader.forEachRemaining(row -> rows.add(renderRow(row, rowType)));
        }
        ObjectNode result = NODES.objectNode();
        result.set("fields", fields);
        result.set("rows", rows);
        return result;
    }

    private static ObjectNode schema(FileStoreTable table) {
        ObjectNode result = NODES.objectNode();
        result.put("schema_id", table.schema().id());
        ArrayNode fields = NODES.arrayNode();
        for (DataField f : table.rowType().getFields()) {
            ObjectNode n = NODES.objectNode();
            n.put("id", f.id());
            n.put("name", f.name());
            n.put("type", f.type().toString());
            fields.add(n);
        }
        result.set("fields", fields);
        return result;
    }

    // ------------------------------------------------------------------ value conversion

    private static Object toInternal(JsonNode v, DataType type) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asInt();
            case SMALLINT:
                return (short) v.asInt();
            case INTEGER:
                return v.asInt();
            case BIGINT:
                return v.asLong();
            case FLOAT:
                return (float) v.asDouble();
            case DOUBLE:
                return v.asDouble();
            case DECIMAL:
                {
                    DecimalType d = (DecimalType) type;
                    Decimal dec =
                            Decimal.fromBigDecimal(
                                    new BigDecimal(v.asText()), d.getPrecision(), d.getScale());
                    if (dec == null) {
                        throw new IllegalArgumentException(v + " does not fit " + type);
                    }
                    return dec;
                }
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.asText());
            case BINARY:
            case VARBINARY:
                return Base64.getDecoder().decode(v.asText());
            case DATE:
                return (int) LocalDate.parse(v.asText()).toEpochDay();
            case TIME_WITHOUT_TIME_ZONE:
                return v.asInt();
            case MULTISET:
                return multisetToInternal(v, (MultisetType) type);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromLocalDateTime(LocalDateTime.parse(v.asText()));
            case ARRAY:
                {
                    DataType element = ((ArrayType) type).getElementType();
                    Object[] values = new Object[v.size()];
                    for (int i = 0; i < v.size(); i++) {
                        values[i] = toInternal(v.get(i), element);
                    }
                    return new GenericArray(values);
                }
            case MAP:
                {
                    MapType m = (MapType) type;
                    Map<Object, Object> map = new LinkedHashMap<>();
                    for (JsonNode pair : v) {
                        map.put(
                                toInternal(pair.get(0), m.getKeyType()),
                                toInternal(pair.get(1), m.getValueType()));
                    }
                    return new GenericMap(map);
                }
            case ROW:
                {
                    List<DataField> fields = ((RowType) type).getFields();
                    GenericRow row = new GenericRow(fields.size());
                    for (int i = 0; i < fields.size(); i++) {
                        DataField f = fields.get(i);
                        row.setField(i, toInternal(v.get(f.name()), f.type()));
                    }
                    return row;
                }
            default:
                throw new IllegalArgumentException("unsupported type " + type);
        }
    }

    private static ObjectNode renderRow(InternalRow row, RowType rowType) {
        ObjectNode node = NODES.objectNode();
        List<DataField> fields = rowType.getFields();
        for (int i = 0; i < fields.size(); i++) {
            DataField f = fields.get(i);
            Object value = InternalRow.createFieldGetter(f.type(), i).getFieldOrNull(row);
            node.set(f.name(), render(value, f.type()));
        }
        return node;
    }

    private static JsonNode render(Object value, DataType type) {
        if (value == null) {
            return NODES.nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return NODES.booleanNode((Boolean) value);
            case TINYINT:
                return NODES.numberNode((int) (Byte) value);
            case SMALLINT:
                return NODES.numberNode((int) (Short) value);
            case INTEGER:
                return NODES.numberNode((Integer) value);
            case BIGINT:
                return NODES.numberNode((Long) value);
            case FLOAT:
                return NODES.numberNode((double) (Float) value);
            case DOUBLE:
                return NODES.numberNode((Double) value);
            case DECIMAL:
                return NODES.textNode(((Decimal) value).toBigDecimal().toPlainString());
            case CHAR:
            case VARCHAR:
                return NODES.textNode(value.toString());
            case BINARY:
            case VARBINARY:
                return NODES.textNode(Base64.getEncoder().encodeToString((byte[]) value));
            case DATE:
                return NODES.textNode(LocalDate.ofEpochDay((Integer) value).toString());
            case TIME_WITHOUT_TIME_ZONE:
                return NODES.numberNode((Integer) value);
            case MULTISET:
                return renderMultiset((InternalMap) value, (MultisetType) type);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return NODES.textNode(
                        ((Timestamp) value)
                                .toLocalDateTime()
                                .atOffset(ZoneOffset.UTC)
                                .format(TS_FORMAT));
            case ARRAY:
                {
                    DataType element = ((ArrayType) type).getElementType();
                    InternalArray array = (InternalArray) value;
                    InternalArray.ElementGetter getter = InternalArray.createElementGetter(element);
                    ArrayNode out = NODES.arrayNode();
                    for (int i = 0; i < array.size(); i++) {
                        out.add(render(getter.getElementOrNull(array, i), element));
                    }
                    return out;
                }
            case MAP:
                {
                    MapType m = (MapType) type;
                    InternalMap map = (InternalMap) value;
                    InternalArray keys = map.keyArray();
                    InternalArray values = map.valueArray();
                    InternalArray.ElementGetter kg = InternalArray.createElementGetter(m.getKeyType());
                    InternalArray.ElementGetter vg =
                            InternalArray.createElementGetter(m.getValueType());
                    ArrayNode out = NODES.arrayNode();
                    for (int i = 0; i < map.size(); i++) {
                        ArrayNode pair = NODES.arrayNode();
                        pair.add(render(kg.getElementOrNull(keys, i), m.getKeyType()));
                        pair.add(render(vg.getElementOrNull(values, i), m.getValueType()));
                        out.add(pair);
                    }
                    return out;
                }
            case ROW:
                return renderRow((InternalRow) value, (RowType) type);
            default:
                throw new IllegalArgumentException(
                        "unsupported type " + type + " (precision " + DataTypeChecks.getPrecision(type) + ")");
        }
    }

    // ------------------------------------------------ TIME and MULTISET values (issue 37 item 9)

    /** TIME travels as its int millisecond of the day; MULTISET as [element, count] pairs. */
    private static Object multisetToInternal(JsonNode v, MultisetType type) {
        Map<Object, Object> map = new LinkedHashMap<>();
        for (JsonNode pair : v) {
            map.put(toInternal(pair.get(0), type.getElementType()), pair.get(1).asInt());
        }
        return new GenericMap(map);
    }

    private static JsonNode renderMultiset(InternalMap map, MultisetType type) {
        InternalArray.ElementGetter kg = InternalArray.createElementGetter(type.getElementType());
        ArrayNode out = NODES.arrayNode();
        for (int i = 0; i < map.size(); i++) {
            ArrayNode pair = NODES.arrayNode();
            pair.add(render(kg.getElementOrNull(map.keyArray(), i), type.getElementType()));
            pair.add(NODES.numberNode(map.valueArray().getInt(i)));
            out.add(pair);
        }
        return out;
    }

    // ------------------------------------------------------------------ file indexes

    /**
     * Per data file of the latest snapshot: where its file index lives (embedded, extra files),
     * the index columns and types its container's head names, and for each probe {field,
     * value} whether Paimon's FileIndexPredicate says an equality filter may match the file
     * (false: the index lets Paimon skip the file).
     */
    private static ObjectNode fileIndex(FileStoreTable table, JsonNode op) throws Exception {
        RowType rowType = table.rowType();
        org.apache.paimon.predicate.PredicateBuilder builder =
                new org.apache.paimon.predicate.PredicateBuilder(rowType);
        List<org.apache.paimon.predicate.Predicate> probes = new ArrayList<>();
        for (JsonNode probe : op.get("probes")) {
            int field = rowType.getFieldIndex(probe.get("field").asText());
            probes.add(
                    builder.equal(
                            field,
                            toInternal(probe.get("value"), rowType.getTypeAt(field))));
        }
        ArrayNode files = NODES.arrayNode();
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit ds = (DataSplit) split;
            for (org.apache.paimon.io.DataFileMeta meta : ds.dataFiles()) {
                ObjectNode file = NODES.objectNode();
                file.put("file", meta.fileName());
                file.put("level", meta.level());
                file.put("row_count", meta.rowCount());
                byte[] embedded = meta.embeddedIndex();
                file.put("embedded", embedded != null);
                ArrayNode extras = NODES.arrayNode();
                String indexFile = null;
                for (String extra : meta.extraFiles()) {
                    extras.add(extra);
                    if (extra.endsWith(".index")) {
                        indexFile = extra;
                    }
                }
                file.set("extra_files", extras);
                byte[] container = embedded;
                if (container == null && indexFile != null) {
                    Path path = new Path(ds.bucketPath(), indexFile);
                    try (org.apache.paimon.fs.SeekableInputStream in =
                            table.fileIO().newInputStream(path)) {
                        container =
                                org.apache.paimon.utils.IOUtils.readFully(in, true);
                    }
                }
                ArrayNode columns = NODES.arrayNode();
                ArrayNode mayMatch = NODES.arrayNode();
                if (container != null) {
                    java.io.DataInputStream head =
                            new java.io.DataInputStream(new java.io.ByteArrayInputStream(container));
                    head.readLong();
                    head.readInt();
                    head.readInt();
                    int n = head.readInt();
                    for (int i = 0; i < n; i++) {
                        String column = head.readUTF();
                        int types = head.readInt();
                        for (int j = 0; j < types; j++) {
                            columns.add(column + ":" + head.readUTF());
                            head.readInt();
                            head.readInt();
                        }
                    }
                    try (org.apache.paimon.fileindex.FileIndexPredicate predicate =
                            new org.apache.paimon.fileindex.FileIndexPredicate(
                                    container, rowType)) {
                        for (org.apache.paimon.predicate.Predicate p : probes) {
                            mayMatch.add(predicate.testPredicate(p));
                        }
                    }
                }
                file.set("index_columns", columns);
                file.set("may_match", mayMatch);
                files.add(file);
            }
        }
        ObjectNode result = NODES.objectNode();
        result.set("files", files);
        return result;
    }

    // ------------------------------------------------------------------ overwrite

    private static ObjectNode overwrite(FileStoreTable table, JsonNode op) throws Exception {
        List<DataField> fields = table.rowType().getFields();
        Map<String, String> partition = new java.util.LinkedHashMap<>();
        JsonNode spec = op.get("partition");
        if (spec != null) {
            spec.fields().forEachRemaining(e -> partition.put(e.getKey(), e.getValue().asText()));
        }
        BatchWriteBuilder builder = table.newBatchWriteBuilder().withOverwrite(partition);
        try (BatchTableWrite write = builder.newWrite();
                BatchTableCommit commit = builder.newCommit()) {
            for (JsonNode row : op.get("rows")) {
                GenericRow out = new GenericRow(RowKind.INSERT, fields.size());
                for (int i = 0; i < fields.size(); i++) {
                    DataField f = fields.get(i);
                    out.setField(i, toInternal(row.get(f.name()), f.type()));
                }
                write.write(out);
            }
            commit.commit(write.prepareCommit());
        }
        return NODES.objectNode();
    }

    // ------------------------------------------------------------------ partition expiry

    private static ObjectNode expirePartitions(FileStoreTable table) throws Exception {
        List<Map<String, String>> expired =
                table.store().newPartitionExpire("oracle-partition-expire").expire(Long.MAX_VALUE);
        ArrayNode out = NODES.arrayNode();
        if (expired != null) {
            for (Map<String, String> spec : expired) {
                ObjectNode o = NODES.objectNode();
                spec.forEach(o::put);
                out.add(o);
            }
        }
        ObjectNode result = NODES.objectNode();
        result.set("expired", out);
        return result;
    }
}
