import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java client's exactly-once loop against the coordinator: a read_committed group consumer, a
 * transactional producer that writes transformed records and the consumer's offsets in one transaction
 * (sendOffsetsToTransaction with the consumer's group metadata: TxnOffsetCommit v3+ with generation and
 * member, KIP-447), then an aborted transaction, then a zombie fenced by a second producer with the same
 * transactional.id. Reports what read_committed and read_uncommitted readers see and the committed offset.
 *
 * Usage: TxnDriver BOOTSTRAP IN OUT GROUP TRANSACTIONAL_ID.
 */
public final class TxnDriver {
    private TxnDriver() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String in = args[1];
        String out = args[2];
        String group = args[3];
        String txid = args[4];
        Common.produce(bootstrap, in, 1, 0, 10);
        TopicPartition inTp = new TopicPartition(in, 0);
        try (KafkaConsumer<String, String> consumer = consumer(bootstrap, group, "read_committed");
                KafkaProducer<String, String> producer = producer(bootstrap, txid)) {
            consumer.subscribe(List.of(in));
            producer.initTransactions();
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (got.size() < 10 && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(got::add);
            }
            Out.emit("consumed", "count", got.size());
            producer.beginTransaction();
            for (ConsumerRecord<String, String> r : got) {
                producer.send(new ProducerRecord<>(out, 0, r.key(), r.value().replace("v", "out")));
            }
            long next = got.get(got.size() - 1).offset() + 1;
            producer.sendOffsetsToTransaction(Map.of(inTp, new OffsetAndMetadata(next)), consumer.groupMetadata());
            producer.commitTransaction();
            Out.emit("committed_txn");

            producer.beginTransaction();
            producer.send(new ProducerRecord<>(out, 0, "x", "doomed")).get();  // written: abort drops unsent records
            producer.sendOffsetsToTransaction(Map.of(inTp, new OffsetAndMetadata(99)), consumer.groupMetadata());
            producer.abortTransaction();
            Out.emit("aborted_txn");
            OffsetAndMetadata committed = consumer.committed(Set.of(inTp)).get(inTp);
            Out.emit("group_offset", "offset", committed == null ? -1 : committed.offset());

            try (KafkaProducer<String, String> successor = producer(bootstrap, txid)) {
                successor.initTransactions();  // fences `producer`
                try {
                    producer.beginTransaction();
                    producer.send(new ProducerRecord<>(out, 0, "z", "zombie")).get();
                    producer.commitTransaction();
                    Out.emit("zombie", "fenced", false);
                } catch (Exception e) {
                    Out.emit("zombie", "fenced", true, "error", Out.error(e));
                }
            }
        } catch (org.apache.kafka.common.KafkaException e) {
            if (!(e.getCause() instanceof org.apache.kafka.common.errors.ProducerFencedException)) {
                throw e;  // closing the fenced producer may report the fence again; anything else is a failure
            }
        }
        Out.emit("read", "isolation", "read_committed", "values", readAll(bootstrap, out, "read_committed"));
        Out.emit("read", "isolation", "read_uncommitted", "values", readAll(bootstrap, out, "read_uncommitted"));
        Out.emit("done");
        System.exit(0);
    }

    static KafkaProducer<String, String> producer(String bootstrap, String txid) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txid);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String group, String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    /** Every value of partition 0 of `topic` a fresh reader with `isolation` sees up to the end offset for that
     *  isolation level (the last stable offset for read_committed, the high watermark otherwise), read when it
     *  starts: waiting for that offset, not for a quiet spell, so a slow machine cannot cut the read short. */
    static List<String> readAll(String bootstrap, String topic, String isolation) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(bootstrap, null, isolation)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (c.position(tp) < end && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    values.add(r.value());
                }
            }
        }
        return values;
    }
}
