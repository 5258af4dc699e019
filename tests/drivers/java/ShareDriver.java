import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The Java 4.3 KafkaShareConsumer (KIP-932) against the coordinator: ShareGroupHeartbeat v1, ShareFetch v2 and
 * ShareAcknowledge v2. Two share consumers of one group read one partition in explicit acknowledgement mode:
 * "v0" is RELEASEd once, "v1" REJECTed, everything else ACCEPTed. Reports every delivery (value, delivery
 * count, consumer) so the test can check that each accepted record came once, the released one came back with
 * delivery count 2 and the rejected one never again.
 *
 * Usage: ShareDriver BOOTSTRAP TOPIC GROUP COUNT.
 */
public final class ShareDriver {
    private ShareDriver() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        int count = Integer.parseInt(args[3]);
        Common.produce(bootstrap, topic, 1, 0, count);
        List<Map<String, Object>> deliveries = java.util.Collections.synchronizedList(new ArrayList<>());
        Set<String> released = java.util.concurrent.ConcurrentHashMap.newKeySet();
        Thread[] threads = new Thread[2];
        for (int i = 0; i < 2; i++) {
            String name = "c" + i;
            threads[i] = new Thread(() -> run(bootstrap, topic, group, name, count, deliveries, released));
            threads[i].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        Out.emit("deliveries", "list", new ArrayList<>(deliveries));
    }

    private static void run(
            String bootstrap,
            String topic,
            String group,
            String name,
            int count,
            List<Map<String, Object>> deliveries,
            Set<String> released) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put("share.acknowledgement.mode", "explicit");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5");
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(p)) {
            consumer.subscribe(Set.of(topic));
            long deadline = System.nanoTime() + 40_000_000_000L;
            long quietSince = System.nanoTime();
            while (System.nanoTime() < deadline) {
                int got = 0;
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(300))) {
                    got++;
                    short dc = r.deliveryCount().orElse((short) -1);
                    deliveries.add(Out.obj("value", r.value(), "offset", r.offset(), "delivery_count", (int) dc,
                            "consumer", name));
                    if (r.value().equals("v0") && released.add("v0")) {
                        consumer.acknowledge(r, AcknowledgeType.RELEASE);
                    } else if (r.value().equals("v1")) {
                        consumer.acknowledge(r, AcknowledgeType.REJECT);
                    } else {
                        consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                }
                if (got > 0) {
                    consumer.commitSync();
                    quietSince = System.nanoTime();
                }
                // stop after 3 s without a record once everything (and the redelivery) has been seen
                if (deliveries.size() >= count + 1 && System.nanoTime() - quietSince > 3_000_000_000L) {
                    break;
                }
            }
        }
    }
}
