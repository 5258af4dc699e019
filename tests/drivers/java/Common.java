import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

/** What every scenario needs: an admin client, a topic, records in it, and bounded waits. */
final class Common {
    private Common() {}

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "java-admin");
        return Admin.create(p);
    }

    static void createTopic(Admin admin, String topic, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
    }

    /**
     * Produces `count` records "v<first>".."v<first+count-1>", record i to partition i % partitions, with the
     * Java producer's defaults (idempotent, acks=all), and returns the end offset of every partition.
     */
    static Map<String, Object> produce(String bootstrap, String topic, int partitions, int first, int count)
            throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        Map<String, Object> ends = new HashMap<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = first; i < first + count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, i % partitions, "k" + i, "v" + i)));
            }
            for (java.util.concurrent.Future<RecordMetadata> f : sent) {
                RecordMetadata md = f.get();
                ends.merge(String.valueOf(md.partition()), md.offset() + 1, (a, b) -> Math.max((Long) a, (Long) b));
            }
        }
        Out.emit("produced", "first", first, "count", count, "end_offsets", ends);
        return ends;
    }

    /** Waits up to `seconds` for `ok`; on time-out reports `what` and the members' state, then exits 2. */
    static void await(String what, int seconds, List<Member> members, BooleanSupplier ok) throws InterruptedException {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (!ok.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                Out.emit("error", "where", what, "error", "timeout",
                        "members", members.stream().map(Member::describe).toList());
                System.exit(2);
            }
            Thread.sleep(50);
        }
    }

    /** All members in one generation above `after`, and their assignments cover 0..partitions-1 exactly once. */
    static boolean settled(List<Member> members, int partitions, int after) {
        Set<Integer> gens = new HashSet<>();
        List<Integer> all = new ArrayList<>();
        for (Member m : members) {
            gens.add(m.generation);
            all.addAll(m.partitions);
        }
        int gen = gens.iterator().next();
        return gens.size() == 1 && gen > after && all.size() == partitions && new HashSet<>(all).size() == partitions;
    }

    static List<Map<String, Object>> describe(List<Member> members) {
        return members.stream().map(Member::describe).toList();
    }
}
