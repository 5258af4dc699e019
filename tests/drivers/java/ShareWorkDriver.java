import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One Java 4.3 KafkaShareConsumer as a worker of a work queue shared with other clients (the asyncio
 * groupcoord.share consumer): explicit mode, every record ACCEPTed, commitSync after each poll. Reports
 * "polling" once it polls, then "accepted" with the values of each batch whose commitSync answered without an
 * error (so the test can account for every record across clients), until a line (or EOF) on stdin says stop;
 * then it closes and reports "done".
 *
 * Usage: ShareWorkDriver BOOTSTRAP TOPIC GROUP.
 */
public final class ShareWorkDriver {
    private ShareWorkDriver() {}

    public static void main(String[] args) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        Thread watcher = new Thread(() -> {
            try {
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            } catch (Exception e) {
                // EOF or a broken pipe: stop as well
            }
            stop.set(true);
        });
        watcher.setDaemon(true);
        watcher.start();
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, args[2]);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put("share.acknowledgement.mode", "explicit");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5");
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(p)) {
            consumer.subscribe(Set.of(args[1]));
            boolean announced = false;
            while (!stop.get()) {
                List<String> values = new ArrayList<>();
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    values.add(r.value());
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    Thread.sleep(5); // a slow worker: the other clients get their share meanwhile
                }
                if (!announced) {
                    Out.emit("polling");
                    announced = true;
                }
                if (values.isEmpty()) {
                    continue;
                }
                Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync(Duration.ofSeconds(30));
                if (result.values().stream().allMatch(Optional::isEmpty)) {
                    Out.emit("accepted", "values", values);
                } else {
                    Out.emit("commit_failed", "values", values, "result", String.valueOf(result));
                }
            }
        }
        Out.emit("done");
    }
}
