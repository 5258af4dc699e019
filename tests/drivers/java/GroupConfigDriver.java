import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The Java 4.3 Admin's group configs (GROUP config resources, Kafka's GroupConfig): incrementalAlterConfigs
 * sets share.auto.offset.reset=earliest and share.record.lock.duration.ms on a share group, a bad value is
 * refused, describeConfigs shows the values and their sources, and a KafkaShareConsumer of that group then
 * receives the records produced before it started (earliest, not the broker's latest).
 *
 * Usage: GroupConfigDriver BOOTSTRAP TOPIC GROUP.
 */
public final class GroupConfigDriver {
    private GroupConfigDriver() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        Common.produce(bootstrap, topic, 1, 0, 5);
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        try (Admin admin = Common.admin(bootstrap)) {
            Collection<AlterConfigOp> ops = List.of(
                    new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("share.record.lock.duration.ms", "20000"), AlterConfigOp.OpType.SET));
            Out.emit("altered", "result", attempt(() -> admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get()));
            Collection<AlterConfigOp> bad = List.of(
                    new AlterConfigOp(new ConfigEntry("share.delivery.count.limit", "1"), AlterConfigOp.OpType.SET));
            Out.emit("bad", "result", attempt(() -> admin.incrementalAlterConfigs(Map.of(resource, bad)).all().get()));
            Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
            Map<String, Object> entries = new TreeMap<>();
            for (ConfigEntry e : config.entries()) {
                entries.put(e.name(), Out.obj("value", e.value(), "source", e.source().name()));
            }
            Out.emit("described", "entries", entries);
        }
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> values = new ArrayList<>();
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(Set.of(topic));
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (values.size() < 5 && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    values.add(r.value());
                }
            }
            c.commitSync();
        }
        Out.emit("consumed", "values", values);
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
}
