import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One consumer with the security settings given as `key=value` arguments (security.protocol, sasl.*, ssl.*):
 * it joins `group` on `topic`, commits offset 5 of partition 0 and reports what `committed()` reads back.
 * Args: bootstrap group topic key=value...
 */
public final class SecureConsumerDriver {
    private SecureConsumerDriver() {}

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        for (int i = 3; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            p.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        String topic = args[2];
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (consumer.assignment().isEmpty() && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200));
            }
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.commitSync(Map.of(tp, new OffsetAndMetadata(5)));
            OffsetAndMetadata got = consumer.committed(java.util.Set.of(tp)).get(tp);
            Out.emit("committed", "assigned", consumer.assignment().size(), "offset", got == null ? -1 : got.offset());
        } catch (Exception e) {
            Out.emit("error", "type", e.getClass().getSimpleName(), "message", String.valueOf(e.getMessage()));
        }
        Out.emit("done");
    }
}
