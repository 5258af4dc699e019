import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Cluster mode's data plane with the Java client (kafka-clients 4.3): one idempotent producer sends COUNT
 * records (value "v<i>" to partition i % partitions), waits in phase `produced` (the test kills a partition
 * leader), sends COUNT more with the same producer (it must follow the leader that takes over), waits in
 * `produced-again`, then a consumer reads every partition from the beginning and reports each record in
 * phase `consumed`.
 *
 * Usage: DataDriver BOOTSTRAP TOPIC COUNT
 */
public final class DataDriver {
    private DataDriver() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            int partitions = producer.partitionsFor(topic).size();
            Out.phase("produced", "offsets", send(producer, topic, partitions, 0, count));
            Out.phase("produced-again", "offsets", send(producer, topic, partitions, count, 2 * count));
        }
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic)) {
                tps.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            List<Object> records = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 60_000;
            while (records.size() < 2 * count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    records.add(List.of(r.partition(), r.offset(), r.value()));
                }
            }
            Out.phase("consumed", "records", records);
        }
        Out.emit("done");
    }

    /** Sends values v<from>..v<to - 1> and waits for each acknowledgement: [[partition, offset], ...]. */
    static List<Object> send(KafkaProducer<String, String> producer, String topic, int partitions, int from, int to)
            throws Exception {
        List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
        for (int i = from; i < to; i++) {
            sent.add(producer.send(new ProducerRecord<>(topic, i % partitions, null, "v" + i)));
        }
        List<Object> out = new ArrayList<>();
        for (java.util.concurrent.Future<RecordMetadata> f : sent) {
            RecordMetadata m = f.get();
            out.add(List.of(m.partition(), m.offset()));
        }
        return out;
    }
}
