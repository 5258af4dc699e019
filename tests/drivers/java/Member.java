import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One group member on its own thread: KafkaConsumer is not thread-safe, so this thread builds, polls,
 * commits and closes it, and publishes (generation, member id, assignment) after every poll for the
 * scenario's main thread. It commits synchronously after every non-empty poll, as an at-least-once app does.
 */
final class Member implements Runnable {
    final String name;
    final String instanceId;
    private final Properties props;
    private final String topic;
    /** "partition:offset" of every record any member consumed, shared by the scenario's members. */
    private final Map<String, String> seen;

    volatile int generation = -1;
    volatile String memberId = "";
    volatile Set<Integer> partitions = Set.of();
    volatile boolean closed;
    final List<String> values = new ArrayList<>();
    private volatile boolean stop;
    private final Thread thread;

    Member(String bootstrap, String group, String topic, String name, String instanceId,
            int sessionTimeoutMs, Map<String, String> seen) {
        this.name = name;
        this.instanceId = instanceId;
        this.topic = topic;
        this.seen = seen;
        props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        // -Dgroup.protocol=consumer: KIP-848 (the coordinator chooses session timeout, heartbeat interval and
        // assignor; the client refuses those settings then)
        String protocol = System.getProperty("group.protocol", "classic");
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (protocol.equals("classic")) {
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, String.valueOf(sessionTimeoutMs));
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "300");
        }
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        if (instanceId != null) {
            props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId);
        }
        String strategy = System.getProperty("partition.assignment.strategy");  // e.g. ...CooperativeStickyAssignor
        if (strategy != null) {
            props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, strategy);
        }
        thread = new Thread(this, name);
        thread.setDaemon(true);
        thread.start();
    }

    static List<Integer> sorted(Collection<Integer> ps) {
        List<Integer> out = new ArrayList<>(ps);
        out.sort(null);
        return out;
    }

    Map<String, Object> describe() {
        return Out.obj("name", name, "instance", instanceId, "member_id", memberId, "generation", generation,
                "partitions", sorted(partitions));
    }

    @Override
    public void run() {
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    Out.emit("revoked", "member", name, "partitions", sorted(tps.stream().map(TopicPartition::partition).toList()));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    Out.emit("assigned", "member", name, "generation", consumer.groupMetadata().generationId(),
                            "member_id", consumer.groupMetadata().memberId(),
                            "partitions", sorted(tps.stream().map(TopicPartition::partition).toList()));
                }
            });
            while (!stop) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                if (!records.isEmpty()) {
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (ConsumerRecord<String, String> r : records) {
                        synchronized (values) {
                            values.add(r.value());
                        }
                        seen.put(r.partition() + ":" + r.offset(), r.value());
                        offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    try {
                        consumer.commitSync(offsets);
                        Map<String, Object> committed = new HashMap<>();
                        offsets.forEach((tp, om) -> committed.put(String.valueOf(tp.partition()), om.offset()));
                        Out.emit("commit", "member", name, "offsets", committed, "records", records.count());
                    } catch (RuntimeException e) {
                        Out.emit("commit_failed", "member", name, "detail", Out.error(e));
                    }
                }
                generation = consumer.groupMetadata().generationId();
                memberId = consumer.groupMetadata().memberId();
                partitions = Set.copyOf(consumer.assignment().stream().map(TopicPartition::partition).toList());
            }
        } catch (RuntimeException e) {
            Out.emit("error", "member", name, "detail", Out.error(e));
        } finally {
            closed = true;
            Out.emit("closed", "member", name);
        }
    }

    /** Stops polling and closes the consumer (a dynamic member sends LeaveGroup; a static one does not). */
    void close() throws InterruptedException {
        stop = true;
        thread.join(30_000);
    }

    int consumed() {
        synchronized (values) {
            return values.size();
        }
    }

    List<String> valuesSnapshot() {
        synchronized (values) {
            return List.copyOf(values);
        }
    }

    static Map<String, String> sharedSeen() {
        return new ConcurrentHashMap<>();
    }
}
