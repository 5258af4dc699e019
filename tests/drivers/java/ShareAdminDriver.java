import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterShareGroupOffsetsResult;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The Java 4.3 Admin's share-group offsets calls (KIP-932): listShareGroupOffsets (DescribeShareGroupOffsets
 * v1), alterShareGroupOffsets (AlterShareGroupOffsets v0) and deleteShareGroupOffsets (DeleteShareGroupOffsets
 * v0), around a KafkaShareConsumer group on a one-partition topic. Emits what each call returned (offsets, or
 * the exception's class) for the test to check.
 *
 * Usage: ShareAdminDriver BOOTSTRAP TOPIC GROUP.
 */
public final class ShareAdminDriver {
    private ShareAdminDriver() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        TopicPartition tp = new TopicPartition(topic, 0);
        Common.produce(bootstrap, topic, 1, 0, 10);
        try (Admin admin = Common.admin(bootstrap)) {
            try (KafkaShareConsumer<String, String> c = consumer(bootstrap, group, topic)) {
                Out.emit("consumed", "values", poll(c, 10));
                c.commitSync();
                // a live member: altering and deleting are refused (NON_EMPTY_GROUP)
                Out.emit("alter_live", "result", attempt(() -> admin.alterShareGroupOffsets(group, Map.of(tp, 0L)).all().get()));
                Out.emit("delete_live", "result", attempt(() -> admin.deleteShareGroupOffsets(group, Set.of(topic)).all().get()));
            }
            Out.emit("listed", "offsets", list(admin, group));
            AlterShareGroupOffsetsResult altered =
                    admin.alterShareGroupOffsets(group, Map.of(tp, 3L, new TopicPartition(topic, 5), 1L));
            Out.emit("altered", "p0", attempt(() -> altered.partitionResult(tp).get()),
                    "p5", attempt(() -> altered.partitionResult(new TopicPartition(topic, 5)).get()));
            Out.emit("listed_after_alter", "offsets", list(admin, group));
            try (KafkaShareConsumer<String, String> c = consumer(bootstrap, group, topic)) {
                Out.emit("consumed_after_alter", "values", poll(c, 7));
                c.commitSync();
            }
            Out.emit("deleted", "result", attempt(() -> admin.deleteShareGroupOffsets(group, Set.of(topic)).all().get()));
            Out.emit("listed_after_delete", "offsets", list(admin, group));
            Out.emit("delete_unknown_group",
                    "result", attempt(() -> admin.deleteShareGroupOffsets(group + "-nobody", Set.of(topic)).all().get()));
        }
    }

    interface Call {
        Object run() throws Exception;
    }

    private static Object attempt(Call call) {
        try {
            call.run();
            return "ok";
        } catch (Exception e) {
            return Out.error(e);
        }
    }

    private static Map<String, Object> list(Admin admin, String group) throws Exception {
        Map<TopicPartition, SharePartitionOffsetInfo> got = admin
                .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                .partitionsToOffsetInfo(group)
                .get();
        Map<String, Object> out = new TreeMap<>();
        got.forEach((tp, info) -> out.put(tp.toString(), info == null ? null
                : Out.obj("start_offset", info.startOffset(), "lag", info.lag().orElse(-1L))));
        return out;
    }

    private static KafkaShareConsumer<String, String> consumer(String bootstrap, String group, String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p);
        c.subscribe(Set.of(topic));
        return c;
    }

    private static List<String> poll(KafkaShareConsumer<String, String> c, int want) {
        List<String> values = new ArrayList<>();
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (values.size() < want && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                values.add(r.value());
            }
        }
        return values;
    }
}
