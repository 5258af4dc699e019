// A Kafka Streams 4.4 word count (group.protocol=streams by default): lines from the input topic are split
// into words, re-keyed by word (a repartition topic), counted in a state store (a changelog topic) and
// written to the output topic. Prints JSON lines: {"event":"state","state":...} on each state change and
// {"event":"tasks","active":[...],"standby":[...]} whenever the local task set changes; exits when stdin
// closes (close() leaves the group), or at once on "exit" (without closing: a crash-like stop).
//
// Args: bootstrap appId input output stateDir [threads] [processing.guarantee]
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public class WordCountApp {
    static synchronized void out(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String tasks(KafkaStreams s, boolean active) {
        TreeSet<String> ids = new TreeSet<>();
        for (ThreadMetadata t : s.metadataForLocalThreads()) {
            for (TaskMetadata m : active ? t.activeTasks() : t.standbyTasks()) {
                ids.add("\"" + m.taskId() + "\"");
            }
        }
        return "[" + String.join(",", ids) + "]";
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, args.length > 5 ? Integer.parseInt(args[5]) : 1);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args.length > 6 ? args[6] : "at_least_once");
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, System.getProperty("group.protocol", "streams"));
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        StreamsBuilder b = new StreamsBuilder();
        b.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(v -> Arrays.asList(v.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter((k, w) -> !w.isEmpty())
            .groupBy((k, w) -> w, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts"))
            .toStream()
            .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));
        KafkaStreams s = new KafkaStreams(b.build(), p);
        AtomicReference<String> last = new AtomicReference<>("");
        s.setStateListener((now, before) -> out("{\"event\":\"state\",\"state\":\"" + now + "\"}"));
        s.setUncaughtExceptionHandler(e -> {
            out("{\"event\":\"error\",\"message\":" + quote(String.valueOf(e)) + "}");
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        s.start();
        Thread watcher = new Thread(() -> {
            while (true) {
                try {
                    String now = "{\"event\":\"tasks\",\"active\":" + tasks(s, true) + ",\"standby\":" + tasks(s, false) + "}";
                    if (!now.equals(last.getAndSet(now))) {
                        out(now);
                    }
                    Thread.sleep(200);
                } catch (Exception e) {
                    return;
                }
            }
        });
        watcher.setDaemon(true);
        watcher.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().equals("exit")) {
                Runtime.getRuntime().halt(0);
            }
        }
        s.close();
        out("{\"event\":\"closed\"}");
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }
}
