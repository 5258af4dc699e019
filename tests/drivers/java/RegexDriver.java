import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A KIP-848 regex subscription: the Java consumer 4.3 with `group.protocol=consumer` and
 * `subscribe(SubscriptionPattern)`, which sends the RE2J pattern as SubscribedTopicRegex for the coordinator
 * to resolve. Creates PREFIX-a (2 partitions), subscribes to "PREFIX-.*", then creates PREFIX-b (3) and
 * waits until the coordinator has assigned it too.
 *
 * Usage: RegexDriver BOOTSTRAP PREFIX GROUP. Phases: `first` (assignment), `second` (assignment).
 */
public final class RegexDriver {
    private RegexDriver() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        String group = args[2];
        try (Admin admin = Common.admin(bootstrap)) {
            Common.createTopic(admin, prefix + "-a", 2);
        }
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-regex");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(new SubscriptionPattern(prefix + "-.*"));
            waitFor(c, 2, "the first topic's 2 partitions");
            Out.phase("first", "assignment", names(c));
            try (Admin admin = Common.admin(bootstrap)) {
                Common.createTopic(admin, prefix + "-b", 3);
            }
            waitFor(c, 5, "both topics' 5 partitions");
            Out.phase("second", "assignment", names(c));
        }
        Out.emit("done");
        System.exit(0);
    }

    private static void waitFor(KafkaConsumer<String, String> c, int count, String what) {
        long deadline = System.nanoTime() + 90_000_000_000L;
        while (c.assignment().size() != count) {
            if (System.nanoTime() > deadline) {
                Out.emit("error", "message", "timed out waiting for " + what + ", have " + names(c));
                System.exit(2);
            }
            c.poll(Duration.ofMillis(100));
        }
    }

    private static List<String> names(KafkaConsumer<String, String> c) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : c.assignment()) {
            out.add(tp.topic() + "-" + tp.partition());
        }
        out.sort(null);
        return out;
    }
}
