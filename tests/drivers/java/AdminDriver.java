import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Java AdminClient group calls against the coordinator, each reported as an event with what it returned or
 * the exception it threw, so the test can compare them with the server's own view.
 *
 * Usage: AdminDriver (groups|topic-ids|configs) BOOTSTRAP TOPIC GROUP.
 */
public final class AdminDriver {
    private AdminDriver() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[1];
        String topic = args[2];
        String group = args[3];
        try (Admin admin = Common.admin(bootstrap)) {
            switch (args[0]) {
                case "groups" -> groups(admin, bootstrap, topic, group);
                case "topic-ids" -> topicIds(admin, topic);
                case "configs" -> configs(admin, topic, group);
                default -> throw new IllegalArgumentException(args[0]);
            }
        }
        Out.emit("done");
        System.exit(0);
    }

    /**
     * Two static members consume and commit; the admin lists, describes and fetches offsets (and may not delete
     * the live group); the members stop without leaving and the admin removes them; then it alters the
     * offsets of the now empty group and deletes it.
     */
    static void groups(Admin admin, String bootstrap, String topic, String group) throws Exception {
        int partitions = 4;
        Common.createTopic(admin, topic, partitions);
        Common.produce(bootstrap, topic, partitions, 0, 20);
        Map<String, String> seen = Member.sharedSeen();
        List<Member> members = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            members.add(new Member(bootstrap, group, topic, "java-a" + i, "admin-inst-" + i, 30000, seen));
        }
        Common.await("consume 20 records", 60, members, () -> seen.size() == 20);
        Common.await("two members settle", 30, members, () -> Common.settled(members, partitions, 0));
        list(admin);
        describe(admin, group);
        offsets(admin, group);
        call("delete_live", () -> admin.deleteConsumerGroups(List.of(group)).all().get());
        Out.phase("described", "members", Common.describe(members));

        for (Member m : members) {
            m.close();  // static: no LeaveGroup, the members stay in the group until removed
        }
        List<MemberToRemove> remove = List.of(new MemberToRemove("admin-inst-0"), new MemberToRemove("admin-inst-1"));
        call("remove_members", () -> admin.removeMembersFromConsumerGroup(group,
                new RemoveMembersFromConsumerGroupOptions(remove)).all().get());
        call("remove_unknown_member", () -> admin.removeMembersFromConsumerGroup(group,
                new RemoveMembersFromConsumerGroupOptions(List.of(new MemberToRemove("nobody")))).all().get());
        describe(admin, group);
        Map<TopicPartition, OffsetAndMetadata> target = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            target.put(new TopicPartition(topic, p), new OffsetAndMetadata(p + 1, "set-by-java-admin"));
        }
        call("alter_offsets", () -> admin.alterConsumerGroupOffsets(group, target).all().get());
        offsets(admin, group);
        Out.phase("altered");

        call("delete", () -> admin.deleteConsumerGroups(List.of(group)).all().get());
        list(admin);
        describe(admin, group);
        offsets(admin, group);
        call("delete_missing", () -> admin.deleteConsumerGroups(List.of(group)).all().get());
        Out.phase("deleted");
    }

    /** describeTopics by topic id (Metadata v12+ keyed by id, empty name), for a real id and an unknown one. */
    static void topicIds(Admin admin, String topic) throws Exception {
        Uuid id = admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic(topic, 3, (short) 1)))
                .topicId(topic).get();
        Out.emit("created", "topic", topic, "topic_id", id.toString());
        call("describe_by_id", () -> {
            Map<Uuid, TopicDescription> found = admin.describeTopics(TopicCollection.ofTopicIds(List.of(id)))
                    .allTopicIds().get();
            TopicDescription d = found.get(id);
            return Out.obj("topic_id", d.topicId().toString(), "name", d.name(),
                    "partitions", d.partitions().stream().map(p -> p.partition()).toList());
        });
        Uuid unknown = Uuid.randomUuid();
        call("describe_unknown_id", () -> admin.describeTopics(TopicCollection.ofTopicIds(List.of(unknown)))
                .allTopicIds().get().keySet().stream().map(Uuid::toString).toList());
    }

    /**
     * The config and cluster calls of issue 13: describeConfigs (topic and broker, with synonyms and
     * documentation), incrementalAlterConfigs (SET, APPEND, a bad value), describeCluster with authorized
     * operations, and deleteConsumerGroupOffsets of a simple group's offsets.
     */
    static void configs(Admin admin, String topic, String group) throws Exception {
        admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic(topic, 2, (short) 1)
                .configs(Map.of("cleanup.policy", "compact")))).all().get();
        ConfigResource t = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        ConfigResource b = new ConfigResource(ConfigResource.Type.BROKER, "0");
        call("describe_topic", () -> entries(admin, t, "cleanup.policy", "retention.ms", "retention.bytes"));
        call("describe_broker", () -> entries(admin, b, "node.id", "log.retention.hours"));
        call("alter_topic", () -> {
            admin.incrementalAlterConfigs(Map.of(t, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "5000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.APPEND))))
                    .all().get();
            return entries(admin, t, "cleanup.policy", "retention.ms");
        });
        call("alter_bad_value", () -> admin.incrementalAlterConfigs(Map.of(t, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET))))
                .all().get());
        call("describe_cluster", () -> {
            DescribeClusterResult r = admin.describeCluster(
                    new DescribeClusterOptions().includeAuthorizedOperations(true));
            return Out.obj("cluster_id", r.clusterId().get(), "controller", r.controller().get().id(),
                    "nodes", r.nodes().get().stream().map(n -> n.id()).toList(),
                    "operations", r.authorizedOperations().get().stream().map(Object::toString).sorted().toList());
        });
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(3), p1, new OffsetAndMetadata(4)))
                .all().get();
        call("delete_offsets", () -> {
            admin.deleteConsumerGroupOffsets(group, java.util.Set.of(p0)).all().get();
            return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().keySet().stream()
                    .map(TopicPartition::toString).sorted().toList();
        });
        call("delete_offsets_unknown_group", () -> admin.deleteConsumerGroupOffsets("no-such-group",
                java.util.Set.of(p0)).all().get());
    }

    static Map<String, Object> entries(Admin admin, ConfigResource r, String... names) throws Exception {
        Config c = admin.describeConfigs(List.of(r),
                new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true)).all().get().get(r);
        Map<String, Object> out = new HashMap<>();
        for (String n : names) {
            ConfigEntry e = c.get(n);
            out.put(n, e == null ? null : Out.obj("value", e.value(), "source", e.source().toString(),
                    "read_only", e.isReadOnly(), "synonyms", e.synonyms().size(),
                    "documented", e.documentation() != null && !e.documentation().isEmpty()));
        }
        return out;
    }

    interface Call {
        Object run() throws Exception;
    }

    /** Runs one admin call and reports `{"event": "admin", "call": name, "result" | "error"...}`. */
    static void call(String name, Call c) {
        try {
            Object result = c.run();
            Out.emit("admin", "call", name, "ok", true, "result", result);
        } catch (Exception e) {
            Map<String, Object> err = Out.error(e);
            Out.emit("admin", "call", name, "ok", false, "error", err.get("error"), "message", err.get("message"));
        }
    }

    static void list(Admin admin) {
        call("list", () -> {
            Collection<ConsumerGroupListing> groups = admin.listConsumerGroups().all().get();
            return groups.stream().map(g -> Out.obj("group_id", g.groupId(),
                    "state", g.groupState().map(Object::toString).orElse(null),
                    "type", g.type().map(Object::toString).orElse(null),
                    "simple", g.isSimpleConsumerGroup())).toList();
        });
    }

    static void describe(Admin admin, String group) {
        call("describe", () -> {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            List<Map<String, Object>> members = new ArrayList<>();
            for (MemberDescription m : d.members()) {
                members.add(Out.obj("member_id", m.consumerId(), "instance", m.groupInstanceId().orElse(null),
                        "client_id", m.clientId(), "host", m.host(),
                        "partitions", Member.sorted(m.assignment().topicPartitions().stream()
                                .map(TopicPartition::partition).toList())));
            }
            return Out.obj("group_id", d.groupId(), "state", d.groupState().toString(), "type", d.type().toString(),
                    "assignor", d.partitionAssignor(), "simple", d.isSimpleConsumerGroup(),
                    "coordinator", d.coordinator() == null ? null : d.coordinator().id(), "members", members);
        });
    }

    static void offsets(Admin admin, String group) {
        call("offsets", () -> {
            Map<TopicPartition, OffsetAndMetadata> o = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get();
            Map<String, Object> out = new HashMap<>();
            o.forEach((tp, om) -> out.put(tp.topic() + ":" + tp.partition(),
                    om == null ? null : Out.obj("offset", om.offset(), "metadata", om.metadata())));
            return out;
        });
    }
}
