import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java AdminClient calls that operator tools make (issue 30 item 16): describeLogDirs (kafka-log-dirs.sh),
 * describeProducers and abortTransaction (kafka-transactions.sh describe-producers / abort), electLeaders
 * (kafka-leader-election.sh), list/alterPartitionReassignments (kafka-reassign-partitions.sh) and the broker's
 * listener configs. Each call is reported as an "admin" event (AdminDriver.call).
 *
 * Usage: ToolsDriver BOOTSTRAP TOPIC TRANSACTIONAL_ID.
 */
public final class ToolsDriver {
    private ToolsDriver() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String txid = args[2];
        TopicPartition tp0 = new TopicPartition(topic, 0);
        TopicPartition tp1 = new TopicPartition(topic, 1);
        TopicPartition unknown = new TopicPartition(topic + "-missing", 0);
        try (Admin admin = Common.admin(bootstrap)) {
            Common.createTopic(admin, topic, 2);
            Common.produce(bootstrap, topic, 2, 0, 6);
            // a transaction left open on partition 0: what kafka-transactions.sh find-hanging / abort are for
            KafkaProducer<String, String> open = transactional(bootstrap, txid);
            open.initTransactions();
            open.beginTransaction();
            open.send(new ProducerRecord<>(topic, 0, "k", "open")).get();
            open.flush();

            AdminDriver.call("log_dirs", () -> logDirs(admin));
            AdminDriver.call("lso_before", () -> lso(admin, tp0));
            AdminDriver.call("producers", () -> producers(admin, List.of(tp0, tp1)));
            PartitionProducerState state = admin.describeProducers(List.of(tp0)).partitionResult(tp0).get();
            ProducerState hanging = state.activeProducers().stream()
                    .filter(p -> p.currentTransactionStartOffset().isPresent()).findFirst().orElseThrow();
            AdminDriver.call("abort", () -> {
                admin.abortTransaction(new AbortTransactionSpec(tp0, hanging.producerId(),
                        (short) hanging.producerEpoch(), hanging.coordinatorEpoch().orElse(-1))).all().get();
                return "aborted";
            });
            AdminDriver.call("producers_after_abort", () -> producers(admin, List.of(tp0)));
            AdminDriver.call("lso_after", () -> lso(admin, tp0));
            open.close(Duration.ZERO);

            AdminDriver.call("elect_preferred", () -> elect(admin, ElectionType.PREFERRED, Set.of(tp0, tp1, unknown)));
            AdminDriver.call("elect_unclean", () -> elect(admin, ElectionType.UNCLEAN, Set.of(tp1)));
            AdminDriver.call("elect_all", () -> elect(admin, ElectionType.PREFERRED, null));
            AdminDriver.call("list_reassignments", () -> admin.listPartitionReassignments().reassignments().get()
                    .keySet().stream().map(TopicPartition::toString).toList());
            AdminDriver.call("list_reassignments_of", () -> admin.listPartitionReassignments(Set.of(tp0))
                    .reassignments().get().keySet().stream().map(TopicPartition::toString).toList());
            Map<TopicPartition, Optional<NewPartitionReassignment>> moves = new HashMap<>();
            moves.put(tp0, Optional.of(new NewPartitionReassignment(List.of(0))));
            moves.put(tp1, Optional.of(new NewPartitionReassignment(List.of(0, 7))));
            moves.put(new TopicPartition(topic, 5), Optional.of(new NewPartitionReassignment(List.of(0))));
            AdminDriver.call("reassign", () -> outcomes(admin.alterPartitionReassignments(moves).values()));
            AdminDriver.call("reassign_cancel", () -> outcomes(admin.alterPartitionReassignments(
                    Map.of(tp0, Optional.empty())).values()));
            AdminDriver.call("broker_listeners", () -> listeners(admin));
        }
        Out.emit("done");
        System.exit(0);
    }

    static KafkaProducer<String, String> transactional(String bootstrap, String txid) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txid);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 600000);  // stays open until the admin aborts it
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    static Object logDirs(Admin admin) throws Exception {
        Map<Integer, Map<String, LogDirDescription>> all = admin.describeLogDirs(List.of(0)).allDescriptions().get();
        List<Map<String, Object>> dirs = new ArrayList<>();
        for (Map.Entry<String, LogDirDescription> e : all.get(0).entrySet()) {
            LogDirDescription d = e.getValue();
            Map<String, Object> replicas = new HashMap<>();
            for (Map.Entry<TopicPartition, ReplicaInfo> r : d.replicaInfos().entrySet()) {
                ReplicaInfo info = r.getValue();
                replicas.put(r.getKey().toString(), Out.obj("size", info.size(), "lag", info.offsetLag(),
                        "future", info.isFuture()));
            }
            dirs.add(Out.obj("path", e.getKey(), "error", d.error() == null ? null : d.error().getClass().getSimpleName(),
                    "replicas", replicas, "total", d.totalBytes().orElse(-1), "usable", d.usableBytes().orElse(-1)));
        }
        return dirs;
    }

    static Object lso(Admin admin, TopicPartition tp) throws Exception {
        return admin.listOffsets(Map.of(tp, OffsetSpec.latest()), new ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
                .partitionResult(tp).get().offset();
    }

    static Object producers(Admin admin, List<TopicPartition> tps) throws Exception {
        Map<String, Object> out = new HashMap<>();
        for (Map.Entry<TopicPartition, PartitionProducerState> e : admin.describeProducers(tps).all().get().entrySet()) {
            List<Map<String, Object>> active = new ArrayList<>();
            for (ProducerState p : e.getValue().activeProducers()) {
                active.add(Out.obj("producer_id", p.producerId(), "epoch", p.producerEpoch(),
                        "last_sequence", p.lastSequence(), "last_timestamp", p.lastTimestamp(),
                        "coordinator_epoch", p.coordinatorEpoch().isPresent() ? p.coordinatorEpoch().getAsInt() : null,
                        "txn_start", p.currentTransactionStartOffset().isPresent()
                                ? p.currentTransactionStartOffset().getAsLong() : null));
            }
            out.put(e.getKey().toString(), active);
        }
        return out;
    }

    static Object elect(Admin admin, ElectionType type, Set<TopicPartition> tps) throws Exception {
        Map<String, Object> out = new HashMap<>();
        for (Map.Entry<TopicPartition, Optional<Throwable>> e : admin.electLeaders(type, tps).partitions().get().entrySet()) {
            out.put(e.getKey().toString(), e.getValue().map(t -> t.getClass().getSimpleName()).orElse("ok"));
        }
        return out;
    }

    static Object outcomes(Map<TopicPartition, KafkaFuture<Void>> futures) {
        Map<String, Object> out = new HashMap<>();
        for (Map.Entry<TopicPartition, KafkaFuture<Void>> e : futures.entrySet()) {
            try {
                e.getValue().get();
                out.put(e.getKey().toString(), "ok");
            } catch (Exception ex) {
                out.put(e.getKey().toString(), Out.error(ex).get("error"));
            }
        }
        return out;
    }

    static Object listeners(Admin admin) throws Exception {
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "0");
        Config config = admin.describeConfigs(List.of(broker)).all().get().get(broker);
        Map<String, Object> out = new HashMap<>();
        for (String name : List.of("listeners", "advertised.listeners", "listener.security.protocol.map",
                "inter.broker.listener.name")) {
            ConfigEntry e = config.get(name);
            out.put(name, e == null ? null : Out.obj("value", e.value(), "source", e.source().toString(),
                    "read_only", e.isReadOnly()));
        }
        return out;
    }
}
