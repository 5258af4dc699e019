import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The Java client driven one command at a time by the shared scenarios (tests/integration/clients.py,
 * `JavaClient`): each stdin line is a command, answered by one `{"event": "reply", ...}` line on stdout (or
 * `{"event": "reply", "error": {...}}`). Values are separated by spaces; "-" stands for none/empty.
 *
 * Commands: topic NAME PARTITIONS | consumer KEY TOPIC GROUP SESSION_MS HEARTBEAT_MS INSTANCE CLIENT_ID |
 * state KEY | commit KEY (TOPIC PARTITION OFFSET METADATA)... | committed KEY (TOPIC PARTITION)... |
 * close KEY | list | describe GROUP | delete GROUP... | quit.
 *
 * The first line must be "bootstrap HOST:PORT" (the JVM is started before the server).
 *
 * Usage: ScenarioDriver, or ScenarioDriver child BOOTSTRAP TOPIC GROUP SESSION_MS (one consumer that
 * prints "assigned" once it owns partitions, then polls until killed).
 */
public final class ScenarioDriver {
    private ScenarioDriver() {}

    /** One consumer on its own thread (KafkaConsumer is not thread-safe): it polls, and runs commands between polls. */
    static final class Polled implements Runnable {
        private final Properties props;
        private final String topic;
        private final Thread thread;
        private final ConcurrentLinkedQueue<Map.Entry<Function<KafkaConsumer<String, String>, Object>, CompletableFuture<Object>>>
                calls = new ConcurrentLinkedQueue<>();
        private final CompletableFuture<Void> ready = new CompletableFuture<>();
        volatile boolean stop;
        volatile int generation = -1;
        volatile String memberId = "";
        volatile List<List<Object>> partitions = List.of();
        volatile Map<String, Object> error;

        Polled(String bootstrap, String topic, String group, int sessionMs, int heartbeatMs, String instance,
                String clientId) {
            this.topic = topic;
            props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, String.valueOf(sessionMs));
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, String.valueOf(heartbeatMs));
            props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            if (instance != null) {
                props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
            }
            if (clientId != null) {
                props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
            }
            thread = new Thread(this, "member-" + group);
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void run() {
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
                consumer.subscribe(List.of(topic));
                ready.complete(null);
                while (!stop) {
                    Map.Entry<Function<KafkaConsumer<String, String>, Object>, CompletableFuture<Object>> call;
                    while ((call = calls.poll()) != null) {
                        try {
                            call.getValue().complete(call.getKey().apply(consumer));
                        } catch (RuntimeException e) {
                            call.getValue().completeExceptionally(e);
                        }
                    }
                    try {
                        consumer.poll(Duration.ofMillis(100));
                    } catch (RuntimeException e) {
                        error = Out.error(e);
                    }
                    generation = consumer.groupMetadata().generationId();
                    memberId = consumer.groupMetadata().memberId();
                    List<List<Object>> owned = new ArrayList<>();
                    for (TopicPartition tp : consumer.assignment()) {
                        owned.add(List.of(tp.topic(), tp.partition()));
                    }
                    partitions = owned;
                }
            } catch (RuntimeException e) {
                error = Out.error(e);
                ready.completeExceptionally(e);
            }
        }

        Object call(Function<KafkaConsumer<String, String>, Object> fn) throws Exception {
            CompletableFuture<Object> f = new CompletableFuture<>();
            calls.add(Map.entry(fn, f));
            return f.get(30, TimeUnit.SECONDS);
        }

        /** Stops polling and closes the consumer (a dynamic member sends LeaveGroup; a static one does not). */
        void close() throws InterruptedException {
            stop = true;
            thread.join(30_000);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("child")) {
            child(args[1], args[2], args[3], Integer.parseInt(args[4]));
            return;
        }
        Map<String, Polled> members = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        // the JVM starts before the server: the first command names it
        String first = in.readLine();
        if (first == null || !first.startsWith("bootstrap ")) {
            Out.emit("error", "where", "start", "error", "protocol", "message", "expected: bootstrap HOST:PORT");
            System.exit(3);
        }
        String bootstrap = first.substring("bootstrap ".length()).trim();
        Out.emit("reply", "result", null);
        try (Admin admin = Common.admin(bootstrap)) {
            String line;
            while ((line = in.readLine()) != null) {
                String[] a = line.trim().split(" ");
                if (a[0].equals("quit")) {
                    break;
                }
                try {
                    Out.emit("reply", "result", command(a, bootstrap, admin, members));
                } catch (Exception e) {
                    Out.emit("reply", "error", Out.error(e));
                }
            }
        }
        for (Polled p : members.values()) {
            p.close();
        }
        Out.emit("done");
        System.exit(0);
    }

    static String none(String s) {
        return s.equals("-") ? null : s;
    }

    static Object command(String[] a, String bootstrap, Admin admin, Map<String, Polled> members) throws Exception {
        switch (a[0]) {
            case "topic" -> {
                Common.createTopic(admin, a[1], Integer.parseInt(a[2]));
                return null;
            }
            case "consumer" -> {
                Polled p = new Polled(bootstrap, a[2], a[3], Integer.parseInt(a[4]), Integer.parseInt(a[5]),
                        none(a[6]), none(a[7]));
                p.ready.get(30, TimeUnit.SECONDS);
                members.put(a[1], p);
                return null;
            }
            case "state" -> {
                Polled p = members.get(a[1]);
                return Out.obj("generation", p.generation, "member_id", p.memberId, "partitions", p.partitions,
                        "error", p.error);
            }
            case "commit" -> {
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (int i = 2; i + 3 < a.length; i += 4) {
                    String meta = none(a[i + 3]);
                    offsets.put(new TopicPartition(a[i], Integer.parseInt(a[i + 1])),
                            new OffsetAndMetadata(Long.parseLong(a[i + 2]), meta == null ? "" : meta));
                }
                members.get(a[1]).call(c -> {
                    c.commitSync(offsets);
                    return null;
                });
                return null;
            }
            case "committed" -> {
                Set<TopicPartition> tps = new HashSet<>();
                for (int i = 2; i + 1 < a.length; i += 2) {
                    tps.add(new TopicPartition(a[i], Integer.parseInt(a[i + 1])));
                }
                Object got = members.get(a[1]).call(c -> {
                    Map<String, Object> out = new HashMap<>();
                    c.committed(tps).forEach((tp, om) -> out.put(tp.topic() + ":" + tp.partition(),
                            om == null ? null : List.of(om.offset(), om.metadata())));
                    return out;
                });
                return got;
            }
            case "close" -> {
                Polled p = members.remove(a[1]);
                if (p != null) {
                    p.close();
                }
                return null;
            }
            case "list" -> {
                List<Object> out = new ArrayList<>();
                for (ConsumerGroupListing g : admin.listConsumerGroups().all().get()) {
                    out.add(Out.obj("group_id", g.groupId(), "state", g.groupState().map(Object::toString).orElse(null),
                            "simple", g.isSimpleConsumerGroup()));
                }
                return out;
            }
            case "describe" -> {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(a[1])).all().get().get(a[1]);
                List<Object> ms = new ArrayList<>();
                for (MemberDescription m : d.members()) {
                    List<Object> parts = new ArrayList<>();
                    m.assignment().topicPartitions().forEach(tp -> parts.add(List.of(tp.topic(), tp.partition())));
                    ms.add(Out.obj("client_id", m.clientId(), "partitions", parts));
                }
                return Out.obj("state", d.groupState().toString(), "assignor", d.partitionAssignor(), "members", ms);
            }
            case "delete" -> {
                Map<String, Object> out = new HashMap<>();
                List<String> groups = List.of(a).subList(1, a.length);
                var results = admin.deleteConsumerGroups(groups).deletedGroups();
                for (String g : groups) {
                    try {
                        results.get(g).get();
                        out.put(g, "ok");
                    } catch (java.util.concurrent.ExecutionException e) {
                        Throwable c = e.getCause();
                        out.put(g, c instanceof GroupNotEmptyException ? "non_empty"
                                : c instanceof GroupIdNotFoundException ? "not_found" : c.getClass().getSimpleName());
                    }
                }
                return out;
            }
            default -> throw new IllegalArgumentException("unknown command " + a[0]);
        }
    }

    static void child(String bootstrap, String topic, String group, int sessionMs) throws Exception {
        Polled p = new Polled(bootstrap, topic, group, sessionMs, 300, null, null);
        p.ready.get(30, TimeUnit.SECONDS);
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (p.partitions.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        System.out.println(p.partitions.isEmpty() ? "unassigned" : "assigned");
        System.out.flush();
        Thread.sleep(3_600_000);
    }
}
